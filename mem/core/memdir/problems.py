"""Every problem code a check reports, one name per kind of problem.

``mem scan --check``, ``mem index --check`` and ``mem status`` report problems
as ``code: message``; a kind two of them can find (a topic file with no pointer
in its index) has one code here, and every check takes its codes from this
table, so a script that greps for a code finds it whichever command ran.
"""

from __future__ import annotations

#: code -> (what it means, the commands that report it)
PROBLEMS: dict[str, tuple[str, tuple[str, ...]]] = {
    # a topic file's frontmatter (mem scan --check; mem scan --json lists them without --check too)
    "no-frontmatter": ("no frontmatter at the first byte", ("scan", "status")),
    "unclosed-frontmatter": ("frontmatter not closed within its first lines", ("scan", "status")),
    "broken-frontmatter": ("frontmatter is not valid YAML", ("scan", "status")),
    "missing-type": ("no type", ("scan", "status")),
    "unknown-type": ("a type other than user, feedback, project or reference", ("scan", "status")),
    "missing-description": ("no description", ("scan", "status")),
    "multiline-description": ("a description on several lines", ("scan", "status")),
    "long-description": ("a description too long", ("scan", "status")),
    # a topic file's content and its place in the directory
    "not-indexed": ("a topic file with no pointer in its index", ("scan", "index", "status")),
    "secret": ("a line that looks like a secret", ("scan", "status")),
    "poison": ("text the poisoning guard flags", ("scan",)),
    "unreadable": ("a file that could not be read", ("scan", "status")),
    "not-regular": ("a FIFO, device or socket named *.md", ("scan",)),
    "link-out": ("a symbolic link leading out of the memory directory", ("scan",)),
    # the index itself (mem index --check)
    "missing-index": ("no MEMORY.md next to topic files", ("index", "status")),
    "index-frontmatter": ("MEMORY.md has frontmatter", ("index", "status")),
    "too-many-lines": ("MEMORY.md over the line limit agents load", ("index", "status")),
    "too-large": ("MEMORY.md over the size limit agents load", ("index", "status")),
    "long-line": ("an index line too long", ("index", "status")),
    "outside-pointer": ("a pointer leading outside the memory directory", ("index", "status")),
    "duplicate-pointer": ("a file listed twice", ("index", "status")),
    "dangling-pointer": ("a pointer to a file that does not exist", ("index", "status")),
}

NOT_INDEXED = "not-indexed"

