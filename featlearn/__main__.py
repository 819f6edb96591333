"""``python -m featlearn``: the same command line as ``featlearn``."""

from featlearn.cli import main

if __name__ == "__main__":
    main()
