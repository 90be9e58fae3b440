"""Prints one closing line for the whole test run from the JUnit XML reports Pants writes."""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else "dist/test/reports")
passed = failed = skipped = 0
failures: list[str] = []
for report in sorted(root.glob("*.xml")):
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            failures.append(f"{case.get('classname', '?')}::{case.get('name', '?')}")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
# CI shows only the tail of its log: name the failures (the first 20) where they will be seen.
for name in failures[:20]:
    print(f"  failed: {name}")
if len(failures) > 20:
    print(f"  ... and {len(failures) - 20} more")
