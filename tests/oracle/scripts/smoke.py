"""Oracle smoke check: which reference package is imported, and a tensor round trip."""

import cosyvoice


def main(x):
    return {"doubled": x * 2, "oracle_file": cosyvoice.__file__}
