"""Components of topologies/spark_wordcount.py: a SparkSpout over a generated text
data set, a line splitter that can fail tuples on purpose, a word counter."""
