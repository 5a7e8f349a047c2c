"""``python -m tenferro``: prints ``tenferro.show_config()``, the document
``tenferro info`` prints (version, build, kernels, topology, providers) plus
the ``python`` section; ``--json`` prints it as one JSON object."""

import argparse
import json
import sys

import tenferro


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m tenferro",
                                     description="Print what this tenferro is and which kernels it runs "
                                     "(tenferro.show_config()).")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.json:
        json.dump(tenferro.show_config(mode="dicts"), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        tenferro.show_config()
    return 0


if __name__ == "__main__":
    sys.exit(main())
