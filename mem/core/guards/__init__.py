"""What must never be written into memory: secrets, and text that would read back as a permission grant."""
