#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Runs rdma-core's pyverbs test suite against an rsoft device, one TAP
line per test.

    pyverbs_tap.py TESTDIR --dev rsoft0 [unittest names...]

TESTDIR is an unpacked copy of /usr/share/doc/rdma-core/tests (see
pyverbs.sh). A skip keeps the suite's own reason ("ok ... # SKIP why");
Documentation/rsoft.rst explains them.
"""
import importlib.machinery
import os
import sys
import unittest


class TapResult(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.n = 0
        self.skips = 0

    def line(self, test, ok, directive='', detail=''):
        self.n += 1
        name = test.id().removeprefix('tests.')
        print(f"{'ok' if ok else 'not ok'} {self.n} - pyverbs {name}{directive}", flush=True)
        if detail:
            for d in detail.rstrip().splitlines()[-6:]:
                print(f'# {d}')

    def addSuccess(self, test):
        self.line(test, True)

    def addSkip(self, test, reason):
        self.skips += 1
        self.line(test, True, f' # SKIP {reason}')

    def failed(self, test, err):
        self.line(test, False, '', self._exc_info_to_string(err, test))

    addFailure = failed
    addError = failed


def main():
    testdir = sys.argv.pop(1)
    sys.path.insert(0, testdir)
    from args_parser import parser
    parser.parse_args()
    loader = importlib.machinery.SourceFileLoader('tests', os.path.join(testdir, '__init__.py'))
    tests = loader.load_module()
    names = sys.argv[1:]
    if names:
        suite = unittest.defaultTestLoader.loadTestsFromNames(names, tests)
    else:
        suite = unittest.defaultTestLoader.loadTestsFromModule(tests)
    result = TapResult()
    suite.run(result)
    print(f'# pyverbs: {result.n} tests, {result.skips} skipped')


if __name__ == '__main__':
    main()
