"""Running topologies: worker processes, executor threads, acking, local mode."""
