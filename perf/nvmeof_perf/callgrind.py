"""Reads a callgrind output file (written with --compress-strings=no and
--compress-pos=no) into a call graph, and answers "how many instructions did
this function cost, not counting code in those objects": the figure that
separates the engine and libnvmeof (with the libc and libstdc++ code they
choose to call) from the RDMA device's library they post to."""
import collections
import os


class CallGraph:
    def __init__(self, path):
        # Functions are keyed by (object path, name): the same name may live in two objects.
        self.self_cost = collections.Counter()
        self.calls = collections.defaultdict(collections.Counter)  # caller -> callee -> inclusive cost
        self._read(path)

    def _read(self, path):
        obj = fn = callee_obj = callee_fn = None
        next_line_is_call = False
        with open(path) as f:
            for line in f:
                head = line[:1]
                if head.isdigit() or head in "+-*":
                    fields = line.split()
                    if len(fields) < 2:
                        continue
                    cost = int(fields[1])
                    if next_line_is_call:
                        self.calls[(obj, fn)][(callee_obj or obj, callee_fn)] += cost
                        next_line_is_call, callee_obj = False, None
                    else:
                        self.self_cost[(obj, fn)] += cost
                    continue
                key, _, value = line.rstrip("\n").partition("=")
                if key == "ob":
                    obj = value
                elif key == "fn":
                    fn = value
                elif key == "cob":
                    callee_obj = value
                elif key == "cfn":
                    callee_fn = value
                elif key == "calls":
                    next_line_is_call = True

    def functions(self, name_part):
        """Every function whose name contains name_part."""
        names = self.self_cost.keys() | self.calls.keys()
        return [f for f in names if f[1] and name_part in f[1]]

    def inclusive(self, fn):
        return self.self_cost[fn] + sum(self.calls[fn].values())

    def own_inclusive(self, fn, is_ours):
        """Inclusive cost of fn without the calls into objects for which
        is_ours(object path) is false (and all they call in turn). A callee's
        share is scaled by its own ratio over all its calls (callgrind's graph
        does not separate callers), which is exact for code reached from one
        path only."""
        memo = {}

        def walk(f, active):
            if f in memo:
                return memo[f]
            total = self.self_cost[f] if is_ours(f[0]) else 0
            for callee, cost in self.calls[f].items():
                if not is_ours(callee[0]) or callee in active:
                    continue
                whole = self.inclusive(callee)
                if whole:
                    total += cost * walk(callee, active | {callee}) / whole
            memo[f] = total
            return total

        return walk(fn, frozenset({fn}))


def objects_except(*prefixes):
    """A predicate on object paths: the file name starts with none of prefixes."""
    return lambda path: not os.path.basename(path or "").startswith(prefixes)
