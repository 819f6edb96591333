"""``python -m featlearn``: the same command line as ``featlearn``."""

from featlearn.main import main

if __name__ == "__main__":
    main()
