"""timeline --format perfetto: Perfetto's protobuf trace, decoded by
Debian's protoc against the public field numbers (tests/perfetto/
perfetto_trace.proto), must hold what the JSON timeline of the same
recording holds: a track per process and per thread with their pids and
tids, per thread the same slices (begin and end counts equal to the JSON's X
events, the same names), the GPU-memory counter with the JSON's values
(whose peak is samples/cuda_train's known peak), the names; and a
--from/--to window keeps the same slices as the JSON's window.  A field the
decode cannot name (a wrong number) fails the test."""
import collections
import json
import os
import re
import subprocess
import frtest

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "perfetto")
STEPS = 3
PEAK = 1_946_157_056 + STEPS * (1 << 20)  # cuda_train's device peak (test_outputs.py)


def decode(path):
    """The trace as protoc's text format, parsed into nested dicts whose
    values are lists (every field repeated or not)."""
    with open(path, "rb") as f:
        p = subprocess.run(["protoc", "--decode=perfetto.protos.Trace", "-I", PROTO_DIR,
                            os.path.join(PROTO_DIR, "perfetto_trace.proto")], stdin=f,
                           capture_output=True, check=True)
    text = p.stdout.decode()
    unknown = re.findall(r"^\s*\d+\s*[:{]", text, re.M)
    assert not unknown, f"fields the subset does not name: {unknown[:5]}"
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.endswith("{"):
            child = {}
            cur.setdefault(line[:-1].strip(), []).append(child)
            stack.append(cur)
            cur = child
        elif line == "}":
            cur = stack.pop()
        else:
            key, value = line.split(":", 1)
            value = value.strip()
            if value.startswith('"'):
                value = json.loads(value)
            elif re.fullmatch(r"-?\d+", value):
                value = int(value)
            cur.setdefault(key, []).append(value)
    return resolve_names(root.get("packet", []))


def one(d, key, default=None):
    v = d.get(key)
    return v[0] if v else default


def resolve_names(packets):
    """Each track event's name and categories spelled out: an interned
    one's iid must be defined before its first use (interned_data of that
    packet or an earlier one), once, and never 0."""
    tables = {"event_names": {}, "event_categories": {}}
    for p in packets:
        for interned in p.get("interned_data", []):
            for kind, table in tables.items():
                for entry in interned.get(kind, []):
                    iid = one(entry, "iid")
                    assert iid and iid not in table, (kind, entry)
                    table[iid] = one(entry, "name")
        for e in p.get("track_event", []):
            if "name_iid" in e:
                assert "name" not in e, e
                e["name"] = [tables["event_names"][one(e, "name_iid")]]
            for iid in e.get("category_iids", []):
                e.setdefault("categories", []).append(tables["event_categories"][iid])
    return packets


class PerfettoTimeline(frtest.Case):
    @classmethod
    def setUpClass(cls):
        frtest.require_root()
        cls.dir = frtest.workdir("timeline_perfetto")
        cls.trace = os.path.join(cls.dir, "train.frec")
        frtest.record(cls.trace, ["--probes", "cuda,syscalls"],
                      ["--", frtest.sample("cuda_train"), "--steps", str(STEPS)])

    def both(self, name, *window):
        js = os.path.join(self.dir, name + ".json")
        pf = os.path.join(self.dir, name + ".pftrace")
        frtest.analyze("timeline", self.trace, "-o", js, *window)
        frtest.analyze("timeline", self.trace, "--format", "perfetto", "-o", pf, *window)
        with open(js) as f:
            events = json.load(f)["traceEvents"]
        return events, decode(pf)

    def tracks(self, packets):
        """uuid -> descriptor (the last one of each uuid: names come last)"""
        out = {}
        for p in packets:
            for d in p.get("track_descriptor", []):
                out[one(d, "uuid")] = d
        return out

    def slices_per_thread(self, packets, tracks):
        """(pid, tid) -> (begin names, end count) of the thread tracks"""
        out = collections.defaultdict(lambda: [[], 0])
        for p in packets:
            for e in p.get("track_event", []):
                d = tracks.get(one(e, "track_uuid"))
                self.assertIsNotNone(d, e)
                th = one(d, "thread")
                if th is None:
                    continue
                key = (one(th, "pid"), one(th, "tid"))
                if one(e, "type") == "TYPE_SLICE_BEGIN":
                    out[key][0].append(one(e, "name"))
                elif one(e, "type") == "TYPE_SLICE_END":
                    out[key][1] += 1
        return out

    def test_same_as_json(self):
        events, packets = self.both("whole")
        self.assertGreater(len(packets), 10)
        # the first packet clears the sequence's state, all use it (interning)
        self.assertEqual([one(p, "sequence_flags") for p in packets[:2]], [3, 2])
        self.assertTrue(all(one(p, "sequence_flags") == 2 for p in packets[1:]))
        # names interned: each defined once, so fewer definitions than uses
        defined = sum(len(i.get("event_names", [])) for p in packets
                      for i in p.get("interned_data", []))
        used = sum(1 for p in packets for e in p.get("track_event", []) if "name_iid" in e)
        self.assertLess(defined, used)
        self.assertEqual(defined, len({one(e, "name") for p in packets
                                       for e in p.get("track_event", []) if "name_iid" in e}))
        self.assertTrue(all(one(p, "trusted_packet_sequence_id") == 1 for p in packets))
        tracks = self.tracks(packets)
        # a descriptor before the first event on its track
        seen = set()
        for p in packets:
            for d in p.get("track_descriptor", []):
                seen.add(one(d, "uuid"))
            for e in p.get("track_event", []):
                self.assertIn(one(e, "track_uuid"), seen, e)
                self.assertIn("timestamp", p, p)
        x = collections.defaultdict(list)
        for e in events:
            if e["ph"] == "X" and e["tid"] < (1 << 31):
                x[(e["pid"], e["tid"])].append(e["name"])
        got = self.slices_per_thread(packets, tracks)
        self.assertTrue(x)
        self.assertEqual(set(got), set(x))
        for key, names in x.items():
            self.assertEqual(sorted(got[key][0]), sorted(names), key)
            self.assertEqual(got[key][1], len(names), key)
        # every thread track is a child of its own process's track
        threads = [d for d in tracks.values() if one(d, "thread") is not None]
        self.assertTrue(threads)
        for d in threads:
            parent = one(tracks[one(d, "parent_uuid")], "process")
            self.assertEqual(one(parent, "pid"), one(one(d, "thread"), "pid"), d)
        # processes and threads named as in the JSON
        pnames = {e["pid"]: e["args"]["name"] for e in events
                  if e["ph"] == "M" and e["name"] == "process_name"}
        for d in tracks.values():
            pr = one(d, "process")
            if pr is not None and one(pr, "pid") in pnames:
                self.assertEqual(one(pr, "process_name"), pnames[one(pr, "pid")])
        self.assertTrue(any("cuda_train" in one(one(d, "process"), "process_name", "")
                            for d in tracks.values() if one(d, "process") is not None))
        # the memory counter: the JSON's values, in order, peaking at the truth
        cjs = [e["args"]["bytes"] for e in events
               if e["ph"] == "C" and e["name"] == "GPU memory in use (device 0)"]
        cuuid = [u for u, d in tracks.items() if one(d, "name") == "GPU memory in use (device 0)"]
        self.assertEqual(len(cuuid), 1, tracks)
        self.assertEqual(one(one(tracks[cuuid[0]], "counter"), "unit"), "UNIT_SIZE_BYTES")
        cpf = [one(e, "counter_value") for p in packets for e in p.get("track_event", [])
               if one(e, "track_uuid") == cuuid[0]]
        self.assertEqual(cpf, cjs)
        self.assertEqual(max(cpf), PEAK)
        # and the memory command's ledger agrees on the peak and the end
        mem = json.loads(frtest.analyze("memory", self.trace, "--json").stdout)
        device = [s for s in mem["series"] if s["space"] == "device"]
        self.assertEqual(len(device), 1, device)
        self.assertEqual(max(cpf), device[0]["peak_bytes"])
        self.assertEqual(cpf[-1], device[0]["end_bytes"])

    def test_slices_nest(self):
        """Ordered by time as a reader orders them (a stable sort: packets
        of one time keep their order), every thread track's ends close the
        slice begun last, and that is its own (a slice's end is the packet
        after its begin), so no slice takes another's end."""
        _, packets = self.both("nest")
        tracks = self.tracks(packets)
        per_track = collections.defaultdict(list)
        for i, p in enumerate(packets):
            for e in p.get("track_event", []):
                d = tracks[one(e, "track_uuid")]
                if one(d, "thread") is not None:
                    per_track[one(e, "track_uuid")].append((one(p, "timestamp"), i, e))
        self.assertTrue(per_track)
        closed = 0
        for uuid, evs in per_track.items():
            stack = []
            for ts, i, e in sorted(evs, key=lambda x: (x[0], x[1])):
                if one(e, "type") == "TYPE_SLICE_BEGIN":
                    stack.append(i)
                elif one(e, "type") == "TYPE_SLICE_END":
                    self.assertTrue(stack, (uuid, ts))
                    self.assertEqual(stack.pop(), i - 1, (uuid, ts))
                    closed += 1
            self.assertEqual(stack, [], uuid)
        self.assertGreater(closed, 0)

    def test_window(self):
        events, _ = self.both("whole_for_window")
        xs = sorted(e["ts"] for e in events if e["ph"] == "X")
        lo, hi = xs[len(xs) // 3] / 1e6, xs[2 * len(xs) // 3] / 1e6
        window = ("--from", "%.6f" % lo, "--to", "%.6f" % hi)
        wevents, wpackets = self.both("window", *window)
        tracks = self.tracks(wpackets)
        x = collections.Counter((e["pid"], e["tid"], e["name"]) for e in wevents
                                if e["ph"] == "X" and e["tid"] < (1 << 31))
        self.assertTrue(x)
        self.assertLess(sum(x.values()), len(xs))
        got = collections.Counter()
        for key, (names, _) in self.slices_per_thread(wpackets, tracks).items():
            for n in names:
                got[key + (n,)] += 1
        self.assertEqual(got, x)
        # every slice begun in the window meets it (ns from the origin)
        for p in wpackets:
            for e in p.get("track_event", []):
                if one(e, "type") == "TYPE_SLICE_BEGIN":
                    self.assertLessEqual(one(p, "timestamp"), hi * 1e9 + 1, p)

    def test_bad_format(self):
        p = frtest.analyze("timeline", self.trace, "--format", "protobuf", "-o",
                           os.path.join(self.dir, "x"), check=False)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("--format takes json or perfetto", p.stderr)


if __name__ == "__main__":
    frtest.main()
