#!/usr/bin/env python3
"""Unit tests for fakekube (stdlib unittest): pagination consistency, 410,
bookmarks, selectors, subresource state machines, faults, WebSocket, and a
list+watch reflector that must converge on /fake/state under churn and faults.

    python3 tests/fakekube/test_fakekube.py [-v] [TestClass.test_name]
"""

import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fkctl  # noqa: E402

VMS = "/apis/kubevirt.io/v1/virtualmachines"
SUB = "/apis/subresources.kubevirt.io/v1/namespaces/%s/%s/%s/%s"


class Fake:
    """One fakekube process in a temporary directory."""

    def __init__(self, *args):
        self.dir = tempfile.mkdtemp(prefix="fakekube-test-")
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fakekube.py"), "--dir", self.dir]
                                     + list(args), stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while not os.path.exists(os.path.join(self.dir, "ready")):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("fakekube did not start: " + open(os.path.join(self.dir, "log")).read())
            time.sleep(0.02)
        self.url = urllib.parse.urlsplit(fkctl.read(self.dir, "url"))
        self.token = fkctl.read(self.dir, "token")
        self.ns_token = fkctl.read(self.dir, "ns-token")

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return rc

    def conn(self, timeout=30):
        if self.url.scheme == "https":
            ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "ca.crt"))
            return http.client.HTTPSConnection(self.url.hostname, self.url.port, context=ctx, timeout=timeout)
        return http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=timeout)

    def req(self, method, path, body=None, token=None, headers=None):
        code, out = fkctl.request(self.dir, method, path, body, token=token)
        return code, (json.loads(out) if out.strip() else None)

    def ok(self, method, path, body=None):
        code, out = self.req(method, path, body)
        if code >= 400:
            raise AssertionError("%s %s -> %d %s" % (method, path, code, out))
        return out

    def state(self, kinds=None):
        return self.ok("GET", "/fake/state" + ("?kinds=" + kinds if kinds else ""))

    def settle(self):
        return self.ok("POST", "/fake/settle", {"timeout": 30})

    def action(self, ns, name, act, body=None):
        plural = "virtualmachineinstances" if act in ("pause", "unpause") else "virtualmachines"
        return self.req("PUT", SUB % (ns, plural, name, act), body or {})

    def vm(self, ns, name):
        return self.req("GET", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name))[1]

    def vmi(self, ns, name):
        code, out = self.req("GET", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstances/%s" % (ns, name))
        return out if code == 200 else None

    def launchers(self, ns, vmi_uid):
        pods = self.ok("GET", "/api/v1/namespaces/%s/pods?labelSelector=%s" % (
            ns, urllib.parse.quote("kubevirt.io/created-by=" + vmi_uid)))["items"]
        return pods

    def watch(self, path, timeout=30):
        """Open a watch; returns (connection, response)."""
        c = self.conn(timeout)
        c.request("GET", path, headers={"Authorization": "Bearer " + self.token, "Accept": "application/json"})
        return c, c.getresponse()


def wait_for(pred, timeout=15, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def read_events(resp, n=None, until=None, timeout=10):
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = resp.readline()
        if not line:
            break
        ev = json.loads(line)
        out.append(ev)
        if n is not None and len(out) >= n:
            break
        if until is not None and until(ev):
            break
    return out


class Base(unittest.TestCase):
    ARGS = ["--vms", "60", "--namespaces", "3", "--step", "0.05", "--bookmark-interval", "0.3", "--seed", "3"]

    @classmethod
    def setUpClass(cls):
        cls.fk = Fake(*cls.ARGS)
        cls.fk.settle()

    @classmethod
    def tearDownClass(cls):
        assert cls.fk.stop() == 0

    def running_vm(self, ns=None, exclude=()):
        for v in self.fk.state("virtualmachines")["virtualmachines"]:
            md = v["metadata"]
            if (ns is None or md["namespace"] == ns) and md["name"] not in exclude \
                    and v["status"]["printableStatus"] == "Running" and v["spec"]["runStrategy"] == "Always" \
                    and not md.get("labels", {}).get("fakekube.kvcon.io/scenario"):
                return md["namespace"], md["name"]
        raise AssertionError("no running VM")

    def stopped_vm(self):
        for v in self.fk.state("virtualmachines")["virtualmachines"]:
            if v["status"]["printableStatus"] == "Stopped" and v["spec"]["runStrategy"] == "Halted":
                return v["metadata"]["namespace"], v["metadata"]["name"]
        raise AssertionError("no stopped VM")


class TestListAndWatch(Base):
    def test_pagination_is_a_consistent_snapshot(self):
        fk = self.fk
        before = fk.state("virtualmachines")
        names = [(v["metadata"]["namespace"], v["metadata"]["name"]) for v in before["virtualmachines"]]
        first = fk.ok("GET", VMS + "?limit=7")
        self.assertEqual(len(first["items"]), 7)
        self.assertEqual(first["metadata"]["remainingItemCount"], len(names) - 7)
        rv = int(first["metadata"]["resourceVersion"])
        # writes between pages must not show up in later pages
        ns, name = names[-1]
        fk.ok("POST", "/fake/delete", {"kind": "virtualmachines", "namespace": ns, "name": name})
        new = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
               "metadata": {"name": "zz-new", "namespace": "ns-00"},
               "spec": {"runStrategy": "Halted", "template": {"spec": {"domain": {"devices": {}}}}}}
        fk.ok("POST", "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachines", new)
        got = list(first["items"])
        cont = first["metadata"]["continue"]
        while cont:
            page = fk.ok("GET", VMS + "?limit=7&continue=" + urllib.parse.quote(cont))
            self.assertEqual(page["metadata"]["resourceVersion"], str(rv))
            got += page["items"]
            cont = page["metadata"].get("continue")
        self.assertEqual([(v["metadata"]["namespace"], v["metadata"]["name"]) for v in got], names)
        self.assertTrue(all(int(v["metadata"]["resourceVersion"]) <= rv for v in got))
        # a fresh list sees the writes
        after = fk.ok("GET", VMS)
        now = {(v["metadata"]["namespace"], v["metadata"]["name"]) for v in after["items"]}
        self.assertIn(("ns-00", "zz-new"), now)
        self.assertNotIn((ns, name), now)
        fk.ok("DELETE", "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachines/zz-new")

    def test_continue_token_expires_with_410(self):
        fk = self.fk
        first = fk.ok("GET", VMS + "?limit=5")
        fk.ok("POST", "/fake/compact")
        code, st = fk.req("GET", VMS + "?limit=5&continue=" + urllib.parse.quote(first["metadata"]["continue"]))
        self.assertEqual(code, 410)
        self.assertEqual((st["kind"], st["reason"], st["code"]), ("Status", "Expired", 410))
        code, st = fk.req("GET", VMS + "?limit=5&continue=garbage!")
        self.assertEqual(code, 400)

    def test_label_and_field_selectors(self):
        fk = self.fk
        allpods = fk.state("pods")["pods"]

        def sel(q):
            return sorted(p["metadata"]["name"] for p in fk.ok("GET", "/api/v1/pods?" + q)["items"])

        launchers = sorted(p["metadata"]["name"] for p in allpods
                           if p["metadata"]["labels"].get("kubevirt.io") == "virt-launcher")
        self.assertTrue(launchers)
        self.assertEqual(sel("labelSelector=kubevirt.io%3Dvirt-launcher"), launchers)
        others = sorted(p["metadata"]["name"] for p in allpods if p["metadata"]["name"] not in launchers)
        self.assertEqual(sel("labelSelector=kubevirt.io!%3Dvirt-launcher"), others)
        self.assertEqual(sel("labelSelector=" + urllib.parse.quote("kubevirt.io in (virt-handler,virt-api)")),
                         sorted(n for n in others if n.startswith(("virt-handler", "virt-api"))))
        self.assertEqual(sel("labelSelector=" + urllib.parse.quote("kubevirt.io,!vm.kubevirt.io/name")), others)
        one = launchers[0]
        self.assertEqual(sel("fieldSelector=metadata.name%3D" + one), [one])
        ns = [p for p in allpods if p["metadata"]["name"] == one][0]["metadata"]["namespace"]
        self.assertEqual(sel("fieldSelector=metadata.namespace%3D" + ns + ",metadata.name%3D" + one), [one])

    def test_watch_from_old_rv_gets_410(self):
        fk = self.fk
        rv = int(fk.ok("GET", VMS + "?limit=1")["metadata"]["resourceVersion"])
        fk.ok("POST", "/fake/compact")
        ns, name = self.running_vm()
        fk.ok("POST", "/fake/apply", dict(fk.vm(ns, name), metadata=dict(fk.vm(ns, name)["metadata"],
                                                                         labels={"touched": "1"})))
        c, resp = fk.watch(VMS + "?watch=1&resourceVersion=%d" % (rv - 1))
        self.assertEqual(resp.status, 200)
        evs = read_events(resp)
        self.assertEqual(len(evs), 1)
        self.assertEqual(evs[0]["type"], "ERROR")
        self.assertEqual((evs[0]["object"]["code"], evs[0]["object"]["reason"]), (410, "Expired"))
        self.assertIn("too old resource version", evs[0]["object"]["message"])
        c.close()

    def test_bookmarks_carry_only_the_resource_version(self):
        fk = self.fk
        lst = fk.ok("GET", VMS + "?limit=1")
        rv = int(lst["metadata"]["resourceVersion"])
        c, resp = fk.watch(VMS + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion=%d" % rv)
        evs = read_events(resp, until=lambda e: e["type"] == "BOOKMARK")
        bm = evs[-1]
        self.assertEqual(bm["type"], "BOOKMARK")
        self.assertEqual(set(bm["object"]["metadata"]), {"resourceVersion"})
        self.assertGreaterEqual(int(bm["object"]["metadata"]["resourceVersion"]), rv)
        self.assertEqual(bm["object"]["kind"], "VirtualMachine")
        c.close()
        # without allowWatchBookmarks: none, and the stream ends at timeoutSeconds
        c, resp = fk.watch(VMS + "?watch=1&timeoutSeconds=1&resourceVersion=" + fk.settle()["resourceVersion"])
        t = time.monotonic()
        evs = read_events(resp, timeout=20)
        self.assertTrue(all(e["type"] != "BOOKMARK" for e in evs))
        self.assertLess(time.monotonic() - t, 15)
        c.close()

    def test_watch_without_rv_starts_with_state_and_follows_selector(self):
        fk = self.fk
        ns, name = self.running_vm()
        q = "?watch=1&fieldSelector=" + urllib.parse.quote("metadata.name=" + name)
        c, resp = fk.watch("/apis/kubevirt.io/v1/namespaces/%s/virtualmachines%s" % (ns, q))
        evs = read_events(resp, n=1)
        self.assertEqual([(e["type"], e["object"]["metadata"]["name"]) for e in evs], [("ADDED", name)])
        self.assertEqual(fk.action(ns, name, "stop")[0], 202)
        evs = read_events(resp, until=lambda e: e["object"].get("status", {}).get("printableStatus") == "Stopped")
        self.assertTrue(evs and all(e["type"] == "MODIFIED" and e["object"]["metadata"]["name"] == name for e in evs))
        c.close()
        fk.action(ns, name, "start")
        fk.settle()
        # a label selector watch turns a relabel into ADDED / DELETED
        c, resp = fk.watch("/apis/kubevirt.io/v1/virtualmachines?watch=1&labelSelector=mark%3Dyes&resourceVersion="
                           + fk.settle()["resourceVersion"])
        vm = fk.vm(ns, name)
        vm["metadata"]["labels"]["mark"] = "yes"
        fk.ok("PUT", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name), vm)
        fk.ok("PATCH", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name),
              {"metadata": {"labels": {"mark": None}}})
        evs = read_events(resp, n=2)
        self.assertEqual([e["type"] for e in evs], ["ADDED", "DELETED"])
        c.close()

    def test_apply_without_reactions_keeps_the_given_state(self):
        fk = self.fk
        vmi = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
               "metadata": {"name": "handmade", "namespace": "ns-02"},
               "spec": {"domain": {"devices": {}}},
               "status": {"phase": "Failed", "reason": "Handmade"}}
        out = fk.ok("POST", "/fake/apply", {"items": [vmi], "react": False})["items"][0]
        self.assertTrue(out["metadata"]["uid"])
        fk.settle()
        got = fk.vmi("ns-02", "handmade")
        self.assertEqual(got["status"], {"phase": "Failed", "reason": "Handmade"})
        self.assertEqual(fk.launchers("ns-02", got["metadata"]["uid"]), [])
        fk.ok("POST", "/fake/delete", {"kind": "VirtualMachineInstance", "namespace": "ns-02", "name": "handmade"})
        self.assertIsNone(fk.vmi("ns-02", "handmade"))

    def test_put_with_stale_resource_version_conflicts(self):
        fk = self.fk
        ns, name = self.running_vm()
        vm = fk.vm(ns, name)
        vm["metadata"]["resourceVersion"] = "1"
        code, st = fk.req("PUT", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name), vm)
        self.assertEqual((code, st["reason"]), (409, "Conflict"))
        self.assertIn("the object has been modified", st["message"])

    def test_auth_errors_are_status_objects(self):
        fk = self.fk
        code, st = fk.req("GET", VMS, token="")
        self.assertEqual((code, st["kind"], st["reason"], st["message"]), (401, "Status", "Unauthorized", "Unauthorized"))
        code, st = fk.req("GET", VMS, token="wrong")
        self.assertEqual(code, 401)
        code, st = fk.req("GET", VMS, token=fk.ns_token)
        self.assertEqual((code, st["reason"]), (403, "Forbidden"))
        self.assertEqual(st["message"], 'virtualmachines.kubevirt.io is forbidden: User "system:serviceaccount:ns-00:kvcon-viewer" '
                                        'cannot list resource "virtualmachines" in API group "kubevirt.io" at the cluster scope')
        code, st = fk.req("GET", "/api/v1/namespaces/ns-01/pods", token=fk.ns_token)
        self.assertEqual(code, 403)
        self.assertIn('in the namespace "ns-01"', st["message"])
        code, st = fk.req("GET", "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachines", token=fk.ns_token)
        self.assertEqual(code, 200)
        code, st = fk.req("GET", "/fake/state", token=fk.ns_token)
        self.assertEqual(code, 403)

    def test_token_rotation_and_latency(self):
        fk = self.fk
        old = fk.token
        fk.ok("POST", "/fake/latency", {"seconds": 0.3})
        t = time.monotonic()
        fk.ok("GET", VMS + "?limit=1")
        self.assertGreaterEqual(time.monotonic() - t, 0.3)
        fk.ok("POST", "/fake/latency", {"seconds": 0})
        fk.ok("POST", "/fake/token", {"token": "rotated-token"})
        try:
            self.assertEqual(fk.req("GET", VMS + "?limit=1", token=old)[0], 401)
            self.assertEqual(fk.req("GET", VMS + "?limit=1", token="rotated-token")[0], 200)
            self.assertEqual(fkctl.read(fk.dir, "token"), "rotated-token")
        finally:
            fk.req("POST", "/fake/token", {"token": old}, token="rotated-token")
        self.assertEqual(fk.req("GET", VMS + "?limit=1")[0], 200)

    def test_request_counters_separate_mutations(self):
        fk = self.fk
        fk.ok("POST", "/fake/requests/reset")
        fk.ok("GET", VMS + "?limit=1")
        fk.ok("GET", "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachines")
        ns, name = self.stopped_vm()
        fk.ok("PATCH", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name),
              {"metadata": {"annotations": {"x": "y"}}})
        r = fk.ok("GET", "/fake/requests")
        self.assertEqual(r["byPattern"]["GET /apis/kubevirt.io/v1/virtualmachines"], 1)
        self.assertEqual(r["byPattern"]["GET /apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines"], 1)
        self.assertEqual(r["mutating"], 1)
        self.assertEqual(r["mutatingByPattern"], {"PATCH /apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines/{name}": 1})


class TestLifecycle(Base):
    def wait_vm(self, ns, name, status):
        return wait_for(lambda: (self.fk.vm(ns, name)["status"].get("printableStatus") == status)
                        and self.fk.vm(ns, name), what="%s/%s %s" % (ns, name, status))

    def chain(self, ns, name):
        vm = self.fk.vm(ns, name)
        vmi = self.fk.vmi(ns, name)
        pods = self.fk.launchers(ns, vmi["metadata"]["uid"]) if vmi else []
        return vm, vmi, pods

    def assert_chain(self, ns, name):
        vm, vmi, pods = self.chain(ns, name)
        self.assertEqual(vmi["metadata"]["ownerReferences"][0]["kind"], "VirtualMachine")
        self.assertEqual(vmi["metadata"]["ownerReferences"][0]["uid"], vm["metadata"]["uid"])
        self.assertEqual(len(pods), 1)
        pod = pods[0]
        self.assertTrue(pod["metadata"]["name"].startswith("virt-launcher-%s-" % name))
        self.assertEqual(pod["metadata"]["ownerReferences"][0]["kind"], "VirtualMachineInstance")
        self.assertEqual(pod["metadata"]["ownerReferences"][0]["uid"], vmi["metadata"]["uid"])
        self.assertEqual(pod["spec"]["nodeName"], vmi["status"]["nodeName"])
        self.assertEqual(pod["status"]["podIP"], vmi["status"]["interfaces"][0]["ipAddress"])
        self.assertEqual(vmi["status"]["activePods"], {pod["metadata"]["uid"]: pod["spec"]["nodeName"]})
        return vm, vmi, pod

    def test_start_stop_start_gives_new_vmi_uid(self):
        fk = self.fk
        ns, name = self.stopped_vm()
        self.assertIsNone(fk.vmi(ns, name))
        code, st = fk.action(ns, name, "stop")
        self.assertEqual((code, st["reason"]), (409, "Conflict"))
        self.assertIn("VM is not running", st["message"])
        self.assertEqual(fk.action(ns, name, "start")[0], 202)
        self.assertEqual(fk.vm(ns, name)["spec"]["runStrategy"], "Always")
        self.wait_vm(ns, name, "Running")
        fk.settle()
        vm, vmi1, pod1 = self.assert_chain(ns, name)
        phases = [p["phase"] for p in vmi1["status"]["phaseTransitionTimestamps"]]
        self.assertEqual(phases, ["Pending", "Scheduling", "Scheduled", "Running"])
        self.assertTrue(vm["status"]["ready"] and vm["status"]["created"])
        code, st = fk.action(ns, name, "start")
        self.assertEqual(code, 409)
        self.assertIn("VM is already running", st["message"])
        self.assertEqual(fk.action(ns, name, "stop")[0], 202)
        self.assertEqual(fk.vm(ns, name)["spec"]["runStrategy"], "Halted")
        self.wait_vm(ns, name, "Stopped")
        fk.settle()
        self.assertIsNone(fk.vmi(ns, name))
        self.assertEqual(fk.launchers(ns, vmi1["metadata"]["uid"]), [])
        vm = fk.vm(ns, name)
        self.assertNotIn("created", vm["status"])
        self.assertEqual(fk.action(ns, name, "start")[0], 202)
        self.wait_vm(ns, name, "Running")
        fk.settle()
        _, vmi2, pod2 = self.assert_chain(ns, name)
        self.assertNotEqual(vmi1["metadata"]["uid"], vmi2["metadata"]["uid"])
        self.assertNotEqual(pod1["metadata"]["uid"], pod2["metadata"]["uid"])
        reasons = [e["reason"] for e in fk.ok("GET", "/api/v1/namespaces/%s/events?fieldSelector=involvedObject.uid%%3D%s"
                                                     % (ns, vm["metadata"]["uid"]))["items"]]
        self.assertIn("SuccessfulCreate", reasons)
        self.assertIn("SuccessfulDelete", reasons)

    def test_restart_gives_new_vmi_and_pod(self):
        fk = self.fk
        ns, name = self.running_vm()
        _, vmi1, pod1 = self.assert_chain(ns, name)
        self.assertEqual(fk.action(ns, name, "restart")[0], 202)
        wait_for(lambda: (fk.vmi(ns, name) or {}).get("metadata", {}).get("uid") not in (None, vmi1["metadata"]["uid"]),
                 what="new VMI")
        self.wait_vm(ns, name, "Running")
        fk.settle()
        vm, vmi2, pod2 = self.assert_chain(ns, name)
        self.assertNotEqual(vmi1["metadata"]["uid"], vmi2["metadata"]["uid"])
        self.assertNotEqual(pod1["metadata"]["uid"], pod2["metadata"]["uid"])
        self.assertEqual(vm["spec"]["runStrategy"], "Always")

    def test_force_stop_skips_graceful_phase(self):
        fk = self.fk
        ns, name = self.running_vm()
        self.assertEqual(fk.action(ns, name, "stop", {"gracePeriod": 0})[0], 202)
        self.wait_vm(ns, name, "Stopped")
        fk.settle()
        self.assertIsNone(fk.vmi(ns, name))

    def test_migrate_keeps_vmi_uid_and_moves_pod(self):
        fk = self.fk
        ns, name = self.running_vm()
        fk.settle()
        _, vmi1, pod1 = self.assert_chain(ns, name)
        self.assertEqual(fk.action(ns, name, "migrate")[0], 202)
        code, st = fk.action(ns, name, "migrate")
        # virt-api relays the VMIM admission webhook's denial as an internal error
        self.assertEqual((code, st["reason"]), (500, "InternalError"))
        self.assertIn("in-flight migration detected", st["message"])
        wait_for(lambda: (fk.vmi(ns, name)["status"].get("migrationState") or {}).get("completed"), what="migration")
        fk.settle()
        vm, vmi2, pod2 = self.assert_chain(ns, name)
        self.assertEqual(vmi1["metadata"]["uid"], vmi2["metadata"]["uid"])
        self.assertNotEqual(pod1["metadata"]["uid"], pod2["metadata"]["uid"])
        self.assertNotEqual(vmi1["status"]["nodeName"], vmi2["status"]["nodeName"])
        ms = vmi2["status"]["migrationState"]
        self.assertEqual((ms["sourceNode"], ms["targetNode"]), (vmi1["status"]["nodeName"], vmi2["status"]["nodeName"]))
        self.assertEqual((ms["sourcePod"], ms["targetPod"]), (pod1["metadata"]["name"], pod2["metadata"]["name"]))
        self.assertTrue(ms["completed"] and ms["startTimestamp"] and ms["endTimestamp"])
        self.assertNotIn("failed", ms)
        migs = [m for m in fk.ok("GET", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstancemigrations" % ns)["items"]
                if m["metadata"]["uid"] == ms["migrationUid"]]
        self.assertEqual(migs[0]["status"]["phase"], "Succeeded")
        self.assertEqual([p["phase"] for p in migs[0]["status"]["phaseTransitionTimestamps"]],
                         ["Scheduling", "Scheduled", "PreparingTarget", "TargetReady", "Running", "Succeeded"])
        self.assertEqual(vm["status"]["printableStatus"], "Running")

    def test_eviction_as_kubevirt_answers_it(self):
        """pods/eviction (kubectl drain): LiveMigrate is 429 and an evacuation migration, retried until the source
        launcher is gone (404); None deletes the launcher (its VMI ends, runStrategy Always starts another)."""
        fk = self.fk
        ev = lambda ns, pod: fk.req("POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (ns, pod),
                                    {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": ns}})
        ns, name = self.running_vm()
        fk.settle()
        self.assertEqual(ev(ns, "virt-launcher-nosuch-abcde")[0], 404)
        fk.ok("PATCH", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name),
              {"spec": {"template": {"spec": {"evictionStrategy": "LiveMigrate"}}}})
        self.assertEqual(fk.action(ns, name, "restart")[0], 202)
        wait_for(lambda: (fk.vmi(ns, name) or {}).get("spec", {}).get("evictionStrategy") == "LiveMigrate"
                 and fk.vmi(ns, name)["status"].get("phase") == "Running", timeout=30, what="restarted LiveMigrate")
        fk.settle()
        _, vmi, pod = self.assert_chain(ns, name)
        code, st = ev(ns, pod["metadata"]["name"])
        self.assertEqual((code, st["reason"]), (429, "TooManyRequests"))
        self.assertEqual(st["message"], 'Eviction triggered evacuation of VMI "%s/%s"' % (ns, name))
        self.assertEqual(fk.vmi(ns, name)["status"]["evacuationNodeName"], pod["spec"]["nodeName"])
        migs = [m for m in fk.ok("GET", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstancemigrations" % ns)["items"]
                if m["spec"]["vmiName"] == name and m["metadata"]["name"].startswith("kubevirt-evacuation-")]
        self.assertEqual(len(migs), 1)
        self.assertEqual(ev(ns, pod["metadata"]["name"])[0], 429)  # retried: the same migration
        wait_for(lambda: (fk.vmi(ns, name)["status"].get("migrationState") or {}).get("completed"), what="evacuation")
        fk.settle()
        # the source launcher is gone: kubectl drain's next try is a 404, which it takes as evicted
        self.assertEqual(ev(ns, pod["metadata"]["name"])[0], 404)
        self.assertEqual(fk.req("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, pod["metadata"]["name"]))[0], 404)
        moved = fk.vmi(ns, name)
        self.assertEqual(moved["metadata"]["uid"], vmi["metadata"]["uid"])
        self.assertNotEqual(moved["status"]["nodeName"], pod["spec"]["nodeName"])
        # evictionStrategy None: the launcher is deleted, the VMI ends, Always starts a new one
        ns2, name2 = self.running_vm(exclude=(name,))
        _, vmi2, pod2 = self.assert_chain(ns2, name2)
        code, st = ev(ns2, pod2["metadata"]["name"])
        self.assertEqual((code, st["status"]), (201, "Success"))
        wait_for(lambda: (fk.vmi(ns2, name2) or vmi2)["metadata"]["uid"] != vmi2["metadata"]["uid"], timeout=30,
                 what="a new VMI after the eviction")
        fk.settle()

    def test_force_stop_of_a_stopping_vm_and_restart_options(self):
        fk = self.fk
        fk.ok("POST", "/fake/step", {"seconds": 2})
        try:
            ns, name = self.running_vm()
            self.assertEqual(fk.action(ns, name, "stop")[0], 202)
            self.assertEqual(fk.vm(ns, name)["status"]["printableStatus"], "Stopping")
            code, st = fk.action(ns, name, "stop")
            self.assertEqual(code, 409)
            self.assertIn("Halted only supports manual stop requests with a shorter graceperiod", st["message"])
            self.assertEqual(fk.action(ns, name, "stop", {"gracePeriod": 0})[0], 202)
            wait_for(lambda: fk.vmi(ns, name) is None, timeout=10, what="force stop")
        finally:
            fk.ok("POST", "/fake/step", {"seconds": 0.05})
        fk.settle()
        code, st = fk.action(ns, name, "restart")
        self.assertEqual(code, 409)
        self.assertIn("RunStategy Halted does not support manual restart requests", st["message"])
        ns2, name2 = self.running_vm()
        code, st = fk.action(ns2, name2, "restart", {"gracePeriodSeconds": 5})
        self.assertEqual((code, st["reason"]), (400, "BadRequest"))
        fk.action(ns, name, "start")
        fk.settle()

    def test_manual_vm_state_change_requests(self):
        fk = self.fk
        ns, name = self.running_vm()
        fk.settle()
        fk.ok("PATCH", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name),
              {"spec": {"runStrategy": "Manual"}})
        fk.settle()
        uid = fk.vmi(ns, name)["metadata"]["uid"]
        # requests are consumed half a step later: a long step keeps them visible
        fk.ok("POST", "/fake/step", {"seconds": 6})
        try:
            self.assertEqual(fk.action(ns, name, "stop")[0], 202)
            vm = fk.vm(ns, name)
            self.assertEqual(vm["spec"]["runStrategy"], "Manual")
            self.assertEqual(vm["status"]["stateChangeRequests"], [{"action": "Stop", "uid": uid}])
        finally:
            fk.ok("POST", "/fake/step", {"seconds": 0.05})
        wait_for(lambda: "stateChangeRequests" not in fk.vm(ns, name)["status"], timeout=20, what="requests consumed")
        wait_for(lambda: fk.vm(ns, name)["status"].get("printableStatus") == "Stopped", timeout=30, what="stopped")
        fk.settle()
        self.assertEqual(fk.action(ns, name, "start")[0], 202)
        self.wait_vm(ns, name, "Running")
        fk.settle()
        self.assertEqual(fk.vm(ns, name)["spec"]["runStrategy"], "Manual")
        fk.ok("PATCH", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachines/%s" % (ns, name),
              {"spec": {"runStrategy": "Always"}})
        fk.settle()

    def test_migrate_to_a_chosen_node(self):
        fk = self.fk
        ns, name = self.running_vm()
        fk.settle()
        src = fk.vmi(ns, name)["status"]["nodeName"]
        dst = [n for n in ("node01", "node02", "node03") if n != src][0]
        self.assertEqual(fk.action(ns, name, "migrate", {"addedNodeSelector": {"kubernetes.io/hostname": dst}})[0], 202)
        wait_for(lambda: (fk.vmi(ns, name)["status"].get("migrationState") or {}).get("completed"), what="migration")
        fk.settle()
        self.assertEqual(fk.vmi(ns, name)["status"]["nodeName"], dst)
        # the source node itself cannot take the target pod: the migration fails
        self.assertEqual(fk.action(ns, name, "migrate", {"addedNodeSelector": {"kubernetes.io/hostname": dst}})[0], 202)
        fk.settle()
        ms = fk.vmi(ns, name)["status"]["migrationState"]
        self.assertTrue(ms["failed"])
        self.assertEqual(fk.vmi(ns, name)["status"]["nodeName"], dst)
        self.assertEqual(len(fk.launchers(ns, fk.vmi(ns, name)["metadata"]["uid"])), 1)

    def test_pause_unpause(self):
        fk = self.fk
        ns, name = self.running_vm()
        code, st = fk.action(ns, name, "unpause")
        self.assertEqual(code, 409)
        self.assertEqual(fk.action(ns, name, "pause")[0], 200)
        code, st = fk.action(ns, name, "migrate")
        self.assertEqual(code, 409)
        self.assertIn("VM is paused", st["message"])
        vmi = fk.vmi(ns, name)
        paused = [c for c in vmi["status"]["conditions"] if c["type"] == "Paused"]
        self.assertEqual((paused[0]["status"], paused[0]["reason"]), ("True", "PausedByUser"))
        self.assertEqual(fk.vm(ns, name)["status"]["printableStatus"], "Paused")
        self.assertEqual(fk.action(ns, name, "pause")[0], 409)
        self.assertEqual(fk.action(ns, name, "unpause")[0], 200)
        self.assertEqual(fk.vm(ns, name)["status"]["printableStatus"], "Running")
        self.assertFalse([c for c in fk.vmi(ns, name)["status"]["conditions"] if c["type"] == "Paused"])

    def test_not_found_and_v1alpha3(self):
        fk = self.fk
        code, st = fk.action("ns-00", "nope", "start")
        self.assertEqual((code, st["reason"]), (404, "NotFound"))
        self.assertEqual(st["message"], 'virtualmachine.kubevirt.io "nope" not found')
        ns, name = self.stopped_vm()
        code, _ = fk.req("PUT", "/apis/subresources.kubevirt.io/v1alpha3/namespaces/%s/virtualmachines/%s/start" % (ns, name), {})
        self.assertEqual(code, 202)
        self.wait_vm(ns, name, "Running")
        fk.settle()

    def test_kubevirt_version_endpoint(self):
        code, v = self.fk.req("GET", "/apis/subresources.kubevirt.io/v1/version")
        self.assertEqual(code, 200)
        self.assertRegex(v["gitVersion"], r"^v1\.[0-9]+\.[0-9]+$")

    def test_vm_created_by_post_starts(self):
        fk = self.fk
        vm = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
              "metadata": {"name": "posted", "namespace": "ns-01"},
              "spec": {"runStrategy": "Always", "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                  "domain": {"devices": {}, "memory": {"guest": "64Mi"}}}}}}
        out = fk.ok("POST", "/apis/kubevirt.io/v1/namespaces/ns-01/virtualmachines", vm)
        self.assertTrue(out["metadata"]["uid"])
        self.wait_vm("ns-01", "posted", "Running")
        fk.settle()
        self.assert_chain("ns-01", "posted")
        code, st = fk.req("POST", "/apis/kubevirt.io/v1/namespaces/ns-01/virtualmachines", vm)
        self.assertEqual((code, st["reason"]), (409, "AlreadyExists"))
        fk.ok("DELETE", "/apis/kubevirt.io/v1/namespaces/ns-01/virtualmachines/posted")
        self.assertIsNone(fk.vmi("ns-01", "posted"))


class TestMigrationObjects(Base):
    ARGS = ["--vms", "12", "--namespaces", "1", "--step", "0.15"]

    def test_standalone_vmi_gets_a_launcher(self):
        fk = self.fk
        vmi = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
               "metadata": {"name": "lonely", "namespace": "ns-00"},
               "spec": {"domain": {"devices": {}, "memory": {"guest": "64Mi"}}}}
        fk.ok("POST", "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachineinstances", vmi)
        got = wait_for(lambda: (fk.vmi("ns-00", "lonely") or {}).get("status", {}).get("phase") == "Running"
                       and fk.vmi("ns-00", "lonely"), what="standalone VMI running")
        pods = fk.launchers("ns-00", got["metadata"]["uid"])
        self.assertEqual(len(pods), 1)
        self.assertEqual(pods[0]["metadata"]["ownerReferences"][0]["uid"], got["metadata"]["uid"])
        fk.settle()
        fk.ok("DELETE", "/apis/kubevirt.io/v1/namespaces/ns-00/virtualmachineinstances/lonely")
        self.assertEqual(fk.launchers("ns-00", got["metadata"]["uid"]), [])

    def test_posted_migration_and_abort(self):
        fk = self.fk
        ns, name = self.running_vm()
        fk.settle()
        mig = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
               "metadata": {"name": "mig-1", "namespace": ns}, "spec": {"vmiName": name}}
        fk.ok("POST", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstancemigrations" % ns, mig)
        wait_for(lambda: (fk.vmi(ns, name)["status"].get("migrationState") or {}).get("targetPod"), what="target pod")
        fk.ok("DELETE", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstancemigrations/mig-1" % ns)
        fk.settle()
        vmi = fk.vmi(ns, name)
        ms = vmi["status"]["migrationState"]
        self.assertTrue(ms["abortRequested"] and ms["failed"])
        self.assertEqual(ms["abortStatus"], "Succeeded")
        self.assertEqual(len(fk.launchers(ns, vmi["metadata"]["uid"])), 1)
        self.assertEqual(fk.vm(ns, name)["status"]["printableStatus"], "Running")
        # a migration of a VMI that does not exist fails
        mig = {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
               "metadata": {"name": "mig-2", "namespace": ns}, "spec": {"vmiName": "nope"}}
        fk.ok("POST", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstancemigrations" % ns, mig)
        got = fk.ok("GET", "/apis/kubevirt.io/v1/namespaces/%s/virtualmachineinstancemigrations/mig-2" % ns)
        self.assertEqual(got["status"]["phase"], "Failed")

    def test_plain_http_on_tls_port(self):
        s = socket.create_connection((self.fk.url.hostname, self.fk.url.port))
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            b = s.recv(4096)
            if not b:
                break
            data += b
        s.close()
        self.assertTrue(data.startswith(b"HTTP/1.0 400 "))
        self.assertIn(b"Client sent an HTTP request to an HTTPS server.", data)


class TestContexts(unittest.TestCase):
    def test_two_clusters_one_kubeconfig(self):
        fk = Fake("--vms", "3", "--namespaces", "1", "--contexts", "2")
        child = os.path.join(fk.dir, "cluster2")
        try:
            kc = open(os.path.join(fk.dir, "kubeconfig")).read()
            for name in ("fake", "fake-ns", "fake-cert", "fake2", "fake2-ns", "fake2-cert"):
                self.assertIn("- name: %s\n  context:" % name, kc)
            self.assertIn("server: " + fkctl.read(child, "url"), kc)
            self.assertIn("current-context: fake\n", kc)
            mine = {v["metadata"]["uid"] for v in fk.state("virtualmachines")["virtualmachines"]}
            code, out = fkctl.request(child, "GET", "/fake/state?kinds=virtualmachines")
            self.assertEqual(code, 200)
            theirs = {v["metadata"]["uid"] for v in json.loads(out)["virtualmachines"]}
            self.assertEqual(len(theirs), 3)
            self.assertFalse(mine & theirs)
            cpid = int(fkctl.read(child, "pid"))
        finally:
            self.assertEqual(fk.stop(), 0)
        # the second cluster's process is gone with the first
        wait_for(lambda: not os.path.exists("/proc/%d" % cpid) or
                 open("/proc/%d/stat" % cpid).read().split()[2] == "Z", what="child exit")


class TestScenarios(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fk = Fake("--vms", "0", "--step", "0.05", "--scenario",
                      "stuck-launcher,imagepull,crashloop,pvc-missing,ready-false,agent-missing",
                      "--scenario", "owner-mismatch,restart-required,migration-failed,weird")
        cls.fk.settle()
        cls.st = cls.fk.state()

    @classmethod
    def tearDownClass(cls):
        cls.fk.stop()

    def get(self, kind, name):
        return [o for o in self.st[kind] if o["metadata"]["name"] == name][0]

    def pods(self, name):
        return [p for p in self.st["pods"] if p["metadata"]["labels"].get("vm.kubevirt.io/name") == name]

    def events(self, uid):
        return [e for e in self.st["events"] if e["involvedObject"]["uid"] == uid]

    def test_printable_statuses(self):
        want = {"stuck-launcher": "ErrorUnschedulable", "imagepull": "ErrImagePull",
                "crashloop": "CrashLoopBackOff", "pvc-missing": "ErrorPvcNotFound", "ready-false": "Running",
                "agent-missing": "Running", "owner-mismatch": "Running", "restart-required": "Running",
                "migration-failed": "Running"}
        for name, status in want.items():
            self.assertEqual(self.get("virtualmachines", name)["status"]["printableStatus"], status, name)

    def test_stuck_launcher(self):
        pod = self.pods("stuck-launcher")[0]
        self.assertEqual(pod["status"]["phase"], "Pending")
        evs = self.events(pod["metadata"]["uid"])
        fs = [e for e in evs if e["reason"] == "FailedScheduling"]
        self.assertEqual(fs[0]["type"], "Warning")
        self.assertTrue(fs[0]["message"].startswith("0/3 nodes are available: 3 Insufficient memory."))
        self.assertEqual(self.get("virtualmachineinstances", "stuck-launcher")["status"]["phase"], "Scheduling")

    def test_pvc_missing_has_no_pod(self):
        self.assertEqual(self.pods("pvc-missing"), [])
        vmi = self.get("virtualmachineinstances", "pvc-missing")
        self.assertEqual(vmi["status"]["phase"], "Pending")
        self.assertIn("FailedPvcNotFound", [c.get("reason") for c in vmi["status"]["conditions"]])

    def test_pod_states(self):
        ip = self.pods("imagepull")[0]["status"]["containerStatuses"]
        self.assertIn("ErrImagePull", [c["state"].get("waiting", {}).get("reason") for c in ip])
        cl = [c for c in self.pods("crashloop")[0]["status"]["containerStatuses"] if c["name"] == "compute"][0]
        self.assertEqual((cl["state"]["waiting"]["reason"], cl["restartCount"]), ("CrashLoopBackOff", 6))
        self.assertIn("startFailure", self.get("virtualmachines", "crashloop")["status"])

    def test_conditions(self):
        def cond(o, t):
            return [c for c in o["status"].get("conditions", []) if c["type"] == t]
        self.assertEqual(cond(self.get("virtualmachineinstances", "ready-false"), "Ready")[0]["status"], "False")
        self.assertEqual(cond(self.get("virtualmachineinstances", "agent-missing"), "AgentConnected"), [])
        self.assertEqual(cond(self.get("virtualmachineinstances", "restart-required"), "AgentConnected")[0]["status"], "True")
        self.assertEqual(cond(self.get("virtualmachines", "restart-required"), "RestartRequired")[0]["status"], "True")

    def test_owner_mismatch(self):
        vmi = self.get("virtualmachineinstances", "owner-mismatch")
        pod = self.pods("owner-mismatch")[0]
        self.assertEqual(pod["metadata"]["labels"]["kubevirt.io/created-by"], vmi["metadata"]["uid"])
        self.assertNotEqual(pod["metadata"]["ownerReferences"][0]["uid"], vmi["metadata"]["uid"])

    def test_migration_failed(self):
        vmi = self.get("virtualmachineinstances", "migration-failed")
        ms = vmi["status"]["migrationState"]
        self.assertTrue(ms["failed"] and ms["completed"] and ms["failureReason"])
        mig = [m for m in self.st["virtualmachineinstancemigrations"] if m["spec"]["vmiName"] == "migration-failed"][0]
        self.assertEqual(mig["status"]["phase"], "Failed")
        self.assertEqual(len(self.pods("migration-failed")), 1)
        self.assertIn("FailedMigration", [e["reason"] for e in self.events(vmi["metadata"]["uid"])])

    def test_weird_names_round_trip(self):
        names = {v["metadata"]["name"] for v in self.st["virtualmachines"]}
        self.assertIn("esc-\x1b]0;pwned\x07-vm", names)
        self.assertIn("\u865a\u62df\u673a-\u4e00", names)
        name = "esc-\x1b]0;pwned\x07-vm"
        vm = self.fk.vm("default", urllib.parse.quote(name, safe=""))
        self.assertEqual(vm["metadata"]["name"], name)
        self.assertIn("\x1b]52;", vm["metadata"]["annotations"]["description"])


class TestFaults(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.fk = Fake("--vms", "20", "--step", "0.05", "--insecure-http")

    @classmethod
    def tearDownClass(cls):
        cls.fk.stop()

    def tearDown(self):
        self.fk.ok("POST", "/fake/faults", {"rate": 0})

    def test_429_with_retry_after(self):
        fk = self.fk
        fk.ok("POST", "/fake/faults", {"rate": 1, "kinds": ["429"]})
        c = fk.conn()
        c.request("GET", VMS, headers={"Authorization": "Bearer " + fk.token})
        r = c.getresponse()
        body = json.loads(r.read())
        self.assertEqual((r.status, r.getheader("Retry-After"), body["reason"]), (429, "1", "TooManyRequests"))
        # the control API and discovery are never faulted
        self.assertEqual(fk.req("GET", "/apis/kubevirt.io/v1")[0], 200)
        self.assertEqual(fk.req("GET", "/fake/info")[0], 200)

    def test_500_on_list(self):
        fk = self.fk
        fk.ok("POST", "/fake/faults", {"rate": 1, "kinds": ["500"]})
        code, st = fk.req("GET", VMS)
        self.assertEqual((code, st["reason"]), (500, "InternalError"))

    def test_410_on_watch_start(self):
        fk = self.fk
        fk.ok("POST", "/fake/faults", {"rate": 1, "kinds": ["410"]})
        c, resp = fk.watch(VMS + "?watch=1&resourceVersion=" + fk.ok("GET", "/fake/info")["resourceVersion"])
        self.assertEqual(resp.status, 200)
        evs = read_events(resp)
        self.assertEqual([(e["type"], e["object"]["code"]) for e in evs], [("ERROR", 410)])

    def test_drop_mid_chunk(self):
        fk = self.fk
        fk.ok("POST", "/fake/faults", {"rate": 1, "kinds": ["drop"]})
        s = socket.create_connection((fk.url.hostname, fk.url.port))
        s.sendall(("GET %s?watch=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % (VMS, fk.token)).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        head, _, body = data.partition(b"\r\n\r\n")
        self.assertIn(b"Transfer-Encoding: chunked", head)
        # the announced chunk is longer than what arrived, and the JSON line is cut
        size, _, rest = body.partition(b"\r\n")
        self.assertGreater(int(size, 16), len(rest))
        self.assertFalse(rest.endswith(b"\n"))
        self.assertGreater(fk.ok("GET", "/fake/requests")["faults"]["drop"], 0)

    def test_drop_watches_control(self):
        fk = self.fk
        c, resp = fk.watch(VMS + "?watch=1&resourceVersion=" + fk.ok("GET", "/fake/info")["resourceVersion"])
        wait_for(lambda: fk.ok("GET", "/fake/info")["watches"] >= 1, what="watch registered")
        fk.ok("POST", "/fake/drop-watches")
        with self.assertRaises((http.client.IncompleteRead, ValueError, OSError, json.JSONDecodeError)):
            while True:
                line = resp.readline()
                if not line:
                    raise http.client.IncompleteRead(b"")
                json.loads(line)
        c.close()


def ws_connect(fk, ns, name, sub="console", proto="plain.kubevirt.io"):
    ctx = ssl.create_default_context(cafile=os.path.join(fk.dir, "ca.crt"))
    raw = socket.create_connection((fk.url.hostname, fk.url.port), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET /apis/subresources.kubevirt.io/v1/namespaces/%s/virtualmachineinstances/%s/%s HTTP/1.1\r\n"
               "Host: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: %s\r\nAuthorization: Bearer %s\r\n\r\n"
               % (ns, urllib.parse.quote(name, safe=""), sub, key, proto, fk.token)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        b = s.recv(4096)
        if not b:
            break
        buf += b
    head, _, rest = buf.partition(b"\r\n\r\n")
    return s, head.decode(), bytearray(rest), key


def ws_frame(op, payload, mask=True, fin=True):
    b0 = (0x80 if fin else 0) | op
    n = len(payload)
    if n < 126:
        h = struct.pack("!BB", b0, (0x80 if mask else 0) | n)
    else:
        h = struct.pack("!BBH", b0, (0x80 if mask else 0) | 126, n)
    if not mask:
        return h + payload
    m = os.urandom(4)
    return h + m + bytes(c ^ m[i % 4] for i, c in enumerate(payload))


def ws_read(s, buf):
    """One server frame (op, payload); the server never masks."""
    while True:
        if len(buf) >= 2:
            assert not buf[1] & 0x80, "server frame masked"
            n = buf[1] & 0x7F
            off = 2
            if n == 126:
                n = struct.unpack_from("!H", buf, 2)[0] if len(buf) >= 4 else None
                off = 4
            elif n == 127:
                n = struct.unpack_from("!Q", buf, 2)[0] if len(buf) >= 10 else None
                off = 10
            if n is not None and len(buf) >= off + n:
                op = buf[0] & 0x0F
                payload = bytes(buf[off:off + n])
                del buf[:off + n]
                return op, payload
        b = s.recv(65536)
        if not b:
            return None, b""
        buf += b


class TestWebSocket(Base):
    ARGS = ["--vms", "6", "--namespaces", "1", "--step", "0.05"]

    def test_console_echo_ping_close(self):
        fk = self.fk
        ns, name = self.running_vm()
        s, head, buf, key = ws_connect(fk, ns, name)
        self.assertIn("101", head.split("\r\n")[0])
        want = base64.b64encode(hashlib.sha1(key.encode() + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest()).decode()
        self.assertIn("Sec-WebSocket-Accept: " + want, head)
        self.assertIn("Sec-WebSocket-Protocol: plain.kubevirt.io", head)
        s.sendall(ws_frame(2, b"hello\r\n"))
        self.assertEqual(ws_read(s, buf), (2, b"hello\r\n"))
        # fragmented message, then a large one
        s.sendall(ws_frame(2, b"ab", fin=False) + ws_frame(9, b"p1") + ws_frame(0, b"cd"))
        got = [ws_read(s, buf) for _ in range(3)]
        self.assertIn((10, b"p1"), got)
        self.assertEqual(b"".join(p for op, p in got if op == 2), b"abcd")
        big = os.urandom(70000)
        s.sendall(ws_frame_big(big))
        echoed = b""
        while len(echoed) < len(big):
            op, p = ws_read(s, buf)
            self.assertEqual(op, 2)
            echoed += p
        self.assertEqual(echoed, big)
        s.sendall(ws_frame(8, struct.pack("!H", 1000)))
        op, p = ws_read(s, buf)
        self.assertEqual((op, struct.unpack("!H", p[:2])[0]), (8, 1000))
        s.close()

    def test_data_frame_inside_a_fragmented_message_is_a_protocol_error(self):
        fk = self.fk
        ns, name = self.running_vm()
        s, head, buf, _ = ws_connect(fk, ns, name)
        s.sendall(ws_frame(2, b"a", fin=False))
        self.assertEqual(ws_read(s, buf), (2, b"a"))
        s.sendall(ws_frame(2, b"b"))
        op, p = ws_read(s, buf)
        self.assertEqual((op, struct.unpack("!H", p[:2])[0]), (8, 1002))
        s.close()

    def test_unmasked_client_frame_is_a_protocol_error(self):
        fk = self.fk
        ns, name = self.running_vm()
        s, head, buf, _ = ws_connect(fk, ns, name)
        s.sendall(ws_frame(2, b"x", mask=False))
        op, p = ws_read(s, buf)
        self.assertEqual((op, struct.unpack("!H", p[:2])[0]), (8, 1002))
        s.close()

    def test_base64_subprotocol(self):
        fk = self.fk
        ns, name = self.running_vm()
        s, head, buf, _ = ws_connect(fk, ns, name, proto="base64.binary.k8s.io")
        self.assertIn("Sec-WebSocket-Protocol: base64.binary.k8s.io", head)
        s.sendall(ws_frame(1, base64.b64encode(b"\x00\xffbin")))
        op, p = ws_read(s, buf)
        self.assertEqual((op, base64.b64decode(p)), (1, b"\x00\xffbin"))
        s.close()

    def test_unix_backend_bridge(self):
        fk = self.fk
        ns, name = self.running_vm()
        path = os.path.join(fk.dir, "serial.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        srv.listen(1)
        got = []

        def backend():
            c, _ = srv.accept()
            c.sendall(b"login: ")
            data = c.recv(100)
            got.append(data)
            c.sendall(data.upper())
            c.close()
        t = threading.Thread(target=backend, daemon=True)
        t.start()
        fk.ok("POST", "/fake/backend", {"namespace": ns, "name": name, "kind": "console", "unix": path})
        s, head, buf, _ = ws_connect(fk, ns, name)
        self.assertEqual(ws_read(s, buf), (2, b"login: "))
        s.sendall(ws_frame(2, b"root\n"))
        self.assertEqual(ws_read(s, buf), (2, b"ROOT\n"))
        op, p = ws_read(s, buf)  # backend closed -> close frame
        self.assertEqual(op, 8)
        t.join(5)
        self.assertEqual(got, [b"root\n"])
        fk.ok("POST", "/fake/backend", {"namespace": ns, "name": name, "kind": "console"})
        srv.close()

    def test_drop_websockets(self):
        fk = self.fk
        ns, name = self.running_vm()
        s, head, buf, _ = ws_connect(fk, ns, name)
        s.sendall(ws_frame(2, b"x"))
        self.assertEqual(ws_read(s, buf), (2, b"x"))
        self.assertEqual(fk.ok("GET", "/fake/info")["websockets"], 1)
        fk.ok("POST", "/fake/drop-websockets", {"close": True})
        op, p = ws_read(s, buf)
        self.assertEqual((op, struct.unpack("!H", p[:2])[0]), (8, 1001))
        self.assertEqual(ws_read(s, buf), (None, b""))
        s.close()
        wait_for(lambda: fk.ok("GET", "/fake/info")["websockets"] == 0, what="bridge gone")

    def test_builtin_vnc_server(self):
        fk = self.fk
        ns, name = self.running_vm()
        s, head, buf, _ = ws_connect(fk, ns, name, sub="vnc")
        self.assertIn("101", head.split("\r\n")[0])
        stream = bytearray()

        def need(n):
            while len(stream) < n:
                op, p = ws_read(s, buf)
                self.assertEqual(op, 2)
                stream.extend(p)
            out = bytes(stream[:n])
            del stream[:n]
            return out
        self.assertEqual(need(12), b"RFB 003.008\n")
        s.sendall(ws_frame(2, b"RFB 003.008\n"))
        self.assertEqual(need(2), b"\x01\x01")
        s.sendall(ws_frame(2, b"\x01"))
        self.assertEqual(need(4), b"\0\0\0\0")
        s.sendall(ws_frame(2, b"\x01"))
        w, h = struct.unpack("!HH", need(4))
        need(16)
        need(struct.unpack("!I", need(4))[0])
        self.assertEqual((w, h), (320, 200))
        # 32 bpp little endian with red in the low byte, then a full update
        pf = struct.pack("!BBBBHHHBBB3x", 32, 24, 0, 1, 255, 255, 255, 0, 8, 16)
        s.sendall(ws_frame(2, b"\x00\0\0\0" + pf + struct.pack("!BBHHHH", 3, 0, 0, 0, w, h)))
        t, n = struct.unpack("!BxH", need(4))
        self.assertEqual((t, n), (0, 1))
        x, y, rw, rh, enc = struct.unpack("!HHHHi", need(12))
        self.assertEqual((x, y, rw, rh, enc), (0, 0, 320, 200, 0))
        pix = need(rw * rh * 4)
        self.assertEqual(pix[0:4], b"\xff\xff\xff\0")  # first bar white
        self.assertEqual(pix[(319) * 4:(320) * 4], b"\0\0\0\0")  # last bar black
        self.assertEqual(pix[(5 * 40) * 4:(5 * 40 + 1) * 4], b"\xff\0\0\0")  # sixth bar red
        # a key press repaints one 8x8 block; an incremental request gets just that
        s.sendall(ws_frame(2, struct.pack("!BB2xI", 4, 1, 0x61) + struct.pack("!BBHHHH", 3, 1, 0, 0, w, h)))
        t, n = struct.unpack("!BxH", need(4))
        self.assertEqual(n, 1)
        x, y, rw, rh, enc = struct.unpack("!HHHHi", need(12))
        self.assertEqual((x, y, rw, rh), (0, 192, 8, 8))
        self.assertEqual(need(rw * rh * 4)[:4], b"\xff\xff\xff\0")
        info = fk.ok("GET", "/fake/vnc-input?namespace=%s&name=%s" % (ns, name))
        self.assertEqual(info["keys"], [{"down": True, "key": 0x61}])
        s.close()

    def test_not_running_vmi_is_rejected(self):
        fk = self.fk
        ns, name = "ns-00", "does-not-exist"
        s, head, buf, _ = ws_connect(fk, ns, name)
        self.assertIn("404", head.split("\r\n")[0])
        s.close()


def ws_frame_big(payload):
    m = os.urandom(4)
    n = len(payload)
    h = struct.pack("!BBQ", 0x82, 0x80 | 127, n) if n >= 65536 else struct.pack("!BBH", 0x82, 0x80 | 126, n)
    mi = int.from_bytes((m * (n // 4 + 1))[:n], "big")
    return h + m + (int.from_bytes(payload, "big") ^ mi).to_bytes(n, "big")


class Reflector:
    """What kvcon does: paginated list, watch from the list RV with bookmarks,
    relist on 410 / errors, reconnect on dropped streams."""

    def __init__(self, fk, plural, path):
        self.fk = fk
        self.plural = plural
        self.path = path
        self.objs = {}
        self.rv = "0"
        self.relists = 0
        self.reconnects = 0
        self.stop = False
        self.lock = threading.Lock()

    def relist(self):
        while True:
            items, cont = [], ""
            ok = True
            while True:
                code, out = fkctl.request(self.fk.dir, "GET", self.path + "?limit=50" +
                                          ("&continue=" + urllib.parse.quote(cont) if cont else ""))
                if code != 200:
                    ok = False
                    time.sleep(0.02)
                    break
                page = json.loads(out)
                items += page["items"]
                cont = page["metadata"].get("continue")
                if not cont:
                    break
            if ok:
                break
        with self.lock:
            self.objs = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in items}
            self.rv = page["metadata"]["resourceVersion"]
        self.relists += 1

    def run(self):
        self.relist()
        while not self.stop:
            try:
                c, resp = self.fk.watch(self.path + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=5&resourceVersion="
                                        + self.rv, timeout=10)
                if resp.status != 200:
                    resp.read()
                    c.close()
                    time.sleep(0.02)
                    continue
                while not self.stop:
                    line = resp.readline()
                    if not line:
                        break
                    ev = json.loads(line)
                    o = ev["object"]
                    if ev["type"] == "ERROR":
                        if o.get("code") == 410:
                            self.relist()
                        break
                    with self.lock:
                        if ev["type"] in ("ADDED", "MODIFIED"):
                            self.objs[(o["metadata"]["namespace"], o["metadata"]["name"])] = o
                        elif ev["type"] == "DELETED":
                            self.objs.pop((o["metadata"]["namespace"], o["metadata"]["name"]), None)
                        self.rv = o["metadata"]["resourceVersion"]
                c.close()
            except (http.client.HTTPException, OSError, ValueError):
                self.reconnects += 1
                time.sleep(0.02)


class TestConvergence(unittest.TestCase):
    """Churn 200/s + 5% faults: a correct reflector ends equal to /fake/state."""

    def test_reflectors_converge(self):
        fk = Fake("--vms", "300", "--namespaces", "4", "--step", "0.05", "--seed", "11",
                  "--bookmark-interval", "0.2", "--history", "300", "--insecure-http")
        try:
            refl = [Reflector(fk, p, path) for p, path in (
                ("virtualmachines", VMS), ("virtualmachineinstances", "/apis/kubevirt.io/v1/virtualmachineinstances"),
                ("pods", "/api/v1/pods"), ("events", "/api/v1/events"))]
            threads = [threading.Thread(target=r.run, daemon=True) for r in refl]
            for t in threads:
                t.start()
            rv0 = int(fk.ok("GET", "/fake/info")["resourceVersion"])
            fk.ok("POST", "/fake/churn", {"rate": 200})
            fk.ok("POST", "/fake/faults", {"rate": 0.05})
            time.sleep(6)
            fk.ok("POST", "/fake/pause-churn")
            fk.settle()
            fk.ok("POST", "/fake/faults", {"rate": 0})
            info = fk.ok("GET", "/fake/info")
            # churn 200 = about 200 writes a second, whatever produced them
            self.assertGreater(int(info["resourceVersion"]) - rv0, 300)
            self.assertLess(int(info["resourceVersion"]) - rv0, 2400)
            final = fk.state()

            def caught_up():
                for r in refl:
                    with r.lock:
                        want = {(o["metadata"]["namespace"], o["metadata"]["name"]): o for o in final[r.plural]}
                        if r.objs != want:
                            return False
                return True
            wait_for(caught_up, timeout=20, what="reflectors to converge")
            faults = fk.ok("GET", "/fake/requests")["faults"]
            self.assertTrue(sum(faults.values()) > 0, faults)
        finally:
            for r in refl:
                r.stop = True
            fk.stop()


if __name__ == "__main__":
    unittest.main(warnings="ignore")
