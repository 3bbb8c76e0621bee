"""The memory library: no click, no printing. Raises MemError subclasses."""
