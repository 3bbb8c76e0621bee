"""The memory directory as an object: layout, write path, state, history."""
