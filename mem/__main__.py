"""Entry point for ``python -m mem`` and the zipapp (the console script calls the same function)."""

from mem.entry import main

if __name__ == "__main__":
    main()
