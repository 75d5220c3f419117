"""Task discovery, validation and prompt hashing."""
