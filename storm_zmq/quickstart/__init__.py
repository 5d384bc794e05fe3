"""Templates of the project `storm-zmq quickstart NAME` creates (package data).

Files under ``templates/`` end in ``.tmpl`` (so that linters and test collectors
leave them alone); ``{{name}}`` and ``{{class_name}}`` in their paths and contents
are replaced by the project's name and its CamelCase form.
"""
