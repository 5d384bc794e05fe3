"""storm-zmq: a Python-native Storm over a pluggable ZeroMQ/TCP transport."""

__version__ = "0.1.0"
