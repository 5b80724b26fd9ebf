#!/usr/bin/env python3
"""The CI recipes of examples/ci/, run by run_recipe.py as their CI would:

    test_recipes.py github|gitlab|kubernetes --deb FILE --work DIR

With verbfault's .deb (VERBFAULT_DEB_URL=file://...) and the recipe's
defaults (the installed sample as the user's program), every job passes:
the conformance report holds every run of the default battery and all
conform; the sweep's shards merge into one report of every seed, no shard
missing, its JUnit published. Then, with a program that mishandles faults
(`sample_rc --buggy`), the pipeline fails where it must: the conformance
job fails with the line that reproduces a failing run in its log, and the
merge still runs and reports the failing seeds.
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPES = os.path.join(HERE, "..", "..", "examples", "ci")
FILES = {"github": "github-actions.yml", "gitlab": "gitlab-ci.yml",
         "kubernetes": "kubernetes-indexed-job.yaml"}

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"test_recipes: FAILED: {what}", file=sys.stderr)


def run(ci, work, env):
    command = [sys.executable, os.path.join(HERE, "run_recipe.py"), ci,
               os.path.join(RECIPES, FILES[ci]), "--work", work]
    if ci != "kubernetes":
        repository = os.path.join(work + "-repository")
        os.makedirs(repository, exist_ok=True)
        command += ["--repository", repository]
    for key, value in env.items():
        command += ["--env", f"{key}={value}"]
    process = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.stdout.decode(errors="replace")
    with open(work + ".out", "w") as out:
        out.write(output)
    result_file = os.path.join(work, "result.json")
    result = json.load(open(result_file)) if os.path.exists(result_file) else {"jobs": []}
    return process.returncode, output, result


def report(path):
    with open(os.path.join(path, "report.json")) as source:
        return json.load(source)


def job(result, name):
    found = [j for j in result["jobs"] if j["name"] == name]
    check(len(found) == 1, f"one job named {name!r} in {[j['name'] for j in result['jobs']]}")
    return found[0] if found else {"status": "missing", "workspace": "", "log": ""}


def log_of(entry):
    return open(entry["log"]).read() if entry.get("log") and os.path.exists(entry["log"]) else ""


def seeds_of(merged):
    return sorted(e["seed"] for e in merged["entries"])


def conform_report_dir(ci, work, result):
    if ci == "github":
        return os.path.join(result["artifacts"], "conformance-report")
    return os.path.join(job(result, "conform")["workspace"], "conform-report")


def sweep_report_dir(ci, work, result):
    if ci == "github":
        return os.path.join(result["artifacts"], "sweep-report")
    return os.path.join(job(result, "sweep-report")["workspace"], "sweep-report")


def test_pipeline(ci, deb, work):
    env = {"VERBFAULT_DEB_URL": "file://" + os.path.abspath(deb)}
    status, output, result = run(ci, os.path.join(work, "correct"), env)
    check(status == 0, f"{ci}: the recipe with the sample passes (exit {status})")
    names = [j["name"] for j in result["jobs"]]
    expected = {"github": ["verbfault", "conform", "sweep (1)", "sweep (2)", "sweep (3)",
                           "sweep (4)", "sweep-report"],
                "gitlab": ["verbfault", "conform", "sweep 1/4", "sweep 2/4", "sweep 3/4",
                           "sweep 4/4", "sweep-report"]}[ci]
    check(names == expected, f"{ci}: jobs {names}, expected {expected}")
    check(all(j["status"] == "success" for j in result["jobs"]), f"{ci}: every job succeeds")
    conformance = report(conform_report_dir(ci, work, result))
    battery = subprocess.run(["verbfault", "conform", "--list-classes"], env=dict(
        os.environ, PATH=os.path.join(work, "correct", "root", "usr", "bin") + ":" +
        os.environ["PATH"]), stdout=subprocess.PIPE).stdout.decode().split()
    check(len(battery) > 10, f"{ci}: the installed verbfault lists the default battery")
    check(len(conformance["entries"]) == len(battery) * len(conformance["seeds"]),
          f"{ci}: the conformance report holds every class x seed")
    check(conformance["summary"]["not_conforming"] == 0, f"{ci}: the sample conforms")
    merged = report(sweep_report_dir(ci, work, result))
    check(seeds_of(merged) == list(range(1, 401)), f"{ci}: the merged sweep holds seeds 1..400")
    check("shard" not in merged and merged["mode"] == "sweep", f"{ci}: the merge is of all shards")
    junit = {os.path.basename(os.path.dirname(j["file"])): j for j in result["junit"]}
    check(set(junit) == {"conform-report", "sweep-report"},
          f"{ci}: JUnit published for the conformance run and the merged sweep: {sorted(junit)}")
    if "sweep-report" in junit:
        check(junit["sweep-report"]["tests"] == 400, f"{ci}: the sweep's JUnit has 400 tests")

    # A program that mishandles faults: the pipeline fails where it must.
    env.update({"TEST_COMMAND": "sample_rc --buggy", "SEEDS": "1..40"})
    status, output, result = run(ci, os.path.join(work, "buggy"), env)
    check(status == 1, f"{ci}: the recipe with the buggy sample fails (exit {status})")
    conform_job = job(result, "conform")
    check(conform_job["status"] == "failure", f"{ci}: the conformance job fails")
    check("reproduce: verbfault run --seed " in log_of(conform_job),
          f"{ci}: the conformance job's log has the line that reproduces a failing run")
    merge_job = job(result, "sweep-report")
    check(merge_job["status"] in ("success", "failure"), f"{ci}: the merge runs after failing shards")
    merged = report(sweep_report_dir(ci, work, result))
    check(seeds_of(merged) == list(range(1, 41)), f"{ci}: the buggy sweep's merge holds seeds 1..40")
    check(merged["summary"]["not_conforming"] == sum(
        1 for e in merged["entries"] if e["verdict"] == "does_not_conform"),
        f"{ci}: the merged summary counts its failures")


def test_kubernetes(deb, work):
    # The image: this machine with the .deb unpacked (as its Dockerfile
    # would install it).
    image = os.path.join(work, "image")
    os.makedirs(image, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", deb, image], check=True)
    reports = os.path.join(work, "reports")
    env = {"VERBFAULT_IMAGE": "registry.invalid/verbfault:test", "TEST_COMMAND": "sample_rc",
           "SEEDS": "1..200", "SHARDS": "4", "REPORTS_CLAIM": "verbfault-reports",
           "REPORTS_PATH": reports,
           "PATH": os.path.join(image, "usr", "bin") + ":" + os.environ["PATH"]}
    status, output, result = run("kubernetes", os.path.join(work, "run"), env)
    check(status == 0, f"kubernetes: every pod succeeds (exit {status})")
    names = [j["name"] for j in result["jobs"]]
    expected = [f"verbfault-sweep-{i}" for i in range(4)] + ["verbfault-sweep-merge"]
    check(names == expected, f"kubernetes: pods {names}, expected {expected}")
    for index in range(4):
        shard = report(os.path.join(reports, f"shard-{index + 1}"))
        check(shard.get("shard") == {"index": index + 1, "count": 4},
              f"kubernetes: completion index {index} ran shard {index + 1}/4")
    merged = report(os.path.join(reports, "merged"))
    check(seeds_of(merged) == list(range(1, 201)), "kubernetes: the merge holds seeds 1..200")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("ci", choices=sorted(FILES))
    parser.add_argument("--deb", required=True)
    parser.add_argument("--work", required=True)
    arguments = parser.parse_args()
    if arguments.ci == "kubernetes":
        test_kubernetes(arguments.deb, arguments.work)
    else:
        test_pipeline(arguments.ci, arguments.deb, arguments.work)
    if failures:
        print(f"test_recipes: {len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print(f"test_recipes: {arguments.ci}: every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
