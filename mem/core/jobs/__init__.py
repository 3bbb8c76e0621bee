"""Model jobs: the SDK wrapper, the confined agent loop and its tools, and each job that drives them."""
