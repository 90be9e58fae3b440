"""Hardware profiles: schema-validated YAML data, one file per kind of node (see ``schema.py``)."""
