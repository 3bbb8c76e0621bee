"""Entry point for ``python -m mem`` and the zipapp."""

from mem.cli import cli


def main() -> None:
    # Inside a zipapp click would name the program after the file.
    cli.main(prog_name="mem", complete_var="_MEM_COMPLETE")


if __name__ == "__main__":
    main()
