#!/usr/bin/env python3
"""Runs a CI recipe of examples/ci/ on this machine, as its CI would.

    run_recipe.py github     WORKFLOW.yml --work DIR [--repository DIR] [--env K=V]...
    run_recipe.py gitlab     .gitlab-ci.yml --work DIR [--repository DIR] [--env K=V]...
    run_recipe.py kubernetes MANIFEST.yaml --work DIR [--env K=V]...

The recipe's YAML is parsed and its shell steps run in order: GitHub's jobs
in the order of their `needs`, each matrix combination with `${{ matrix.X }}`
set; GitLab's jobs stage by stage, `parallel: N` as N jobs with
CI_NODE_INDEX/CI_NODE_TOTAL; a Kubernetes Indexed Job as one pod per
completion index with JOB_COMPLETION_INDEX, after `envsubst` of the
manifest. Each job starts from a fresh copy of --repository (GitHub: at
actions/checkout) in a workspace of its own; artifacts travel between jobs
as the CI moves them (upload-/download-artifact, GitLab's `artifacts:`).

What a container image would hold is this machine: `apt-get install` of a
.deb unpacks it into DIR/root, whose usr/bin is on PATH; `apt-get install`
of a package name checks that this machine has it (nothing is installed);
`apt-get update` and `sudo` are no-ops. An action or a keyword the runner
does not know is an error, never skipped.

Writes DIR/result.json: each job's name, status ("success", "failure",
"skipped") and workspace, and where each artifact went. Exit status 0 when
every job succeeded, 1 when one failed, 2 for a recipe it cannot run.
"""

import argparse
import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import yaml


class RecipeError(Exception):
    """A recipe this runner cannot run as its CI would."""


APT_GET = r"""#!/bin/sh
# apt-get as a CI image's root would run it, on this machine: .debs are
# unpacked into the runner's root; package names must be installed here.
root="$RECIPE_ROOT"
[ "$1" = update ] && exit 0
[ "$1" = install ] || { echo "apt-get (recipe runner): only update and install: $*" >&2; exit 100; }
shift
for word in "$@"; do
  case "$word" in
    -*) ;;
    *.deb) dpkg-deb -x "$word" "$root" || exit 100
           echo "apt-get (recipe runner): unpacked $word into $root" ;;
    *) dpkg-query -W -f='${Status}' "$word" 2>/dev/null | grep -q "install ok installed" ||
         { echo "apt-get (recipe runner): $word is not installed on this machine" >&2; exit 100; } ;;
  esac
done
"""


def copy_into(source, target):
    """Copies a file or a directory's contents to target (a directory)."""
    os.makedirs(target, exist_ok=True)
    if os.path.isdir(source):
        shutil.copytree(source, target, dirs_exist_ok=True, symlinks=True)
    else:
        shutil.copy2(source, target)


class Runner:
    def __init__(self, work, repository, overrides):
        self.work = os.path.abspath(work)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.repository = repository
        self.overrides = overrides
        self.root = os.path.join(self.work, "root")
        self.shims = os.path.join(self.work, "shims")
        self.store = os.path.join(self.work, "artifacts")
        for directory in (self.root, self.shims, self.store):
            os.makedirs(directory)
        with open(os.path.join(self.shims, "apt-get"), "w") as shim:
            shim.write(APT_GET)
        with open(os.path.join(self.shims, "sudo"), "w") as shim:
            shim.write('#!/bin/sh\nexec "$@"\n')
        for name in ("apt-get", "sudo"):
            os.chmod(os.path.join(self.shims, name), 0o755)
        self.jobs = []  # {"name", "status", "workspace", "log"}
        self.junit = []  # published JUnit files

    def environment(self, variables):
        env = dict(os.environ)
        env.update({k: str(v) for k, v in variables.items()})
        env.update(self.overrides)
        env["RECIPE_ROOT"] = self.root
        env["PATH"] = os.pathsep.join(
            [self.shims, os.path.join(self.root, "usr", "bin"), env["PATH"]])
        env["CI"] = "true"
        return env

    def workspace(self, name):
        path = os.path.join(self.work, "jobs", re.sub(r"[^A-Za-z0-9_.-]+", "_", name))
        os.makedirs(path)
        return path

    def checkout(self, workspace):
        if self.repository:
            copy_into(self.repository, workspace)

    def shell(self, script, env, cwd, log):
        """Runs a script with bash -e, its output to the log and ours."""
        with open(log, "a") as out:
            out.write("+ " + script.strip().replace("\n", "\n+ ") + "\n")
            out.flush()
            process = subprocess.run(["bash", "-e", "-c", script], env=env, cwd=cwd,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            text = process.stdout.decode(errors="replace")
            out.write(text)
        sys.stdout.write(text)
        return process.returncode

    def publish_junit(self, pattern, cwd):
        files = sorted(glob.glob(os.path.join(cwd, pattern)))
        if not files:
            raise RecipeError(f"JUnit report {pattern}: no file matches")
        for path in files:
            root = ElementTree.parse(path).getroot()
            suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
            if root.tag not in ("testsuite", "testsuites") or not suites:
                raise RecipeError(f"{path}: expected JUnit XML (testsuites/testsuite)")
            tests = sum(int(s.get("tests", 0)) for s in suites)
            failures = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
            self.junit.append({"file": path, "tests": tests, "failures": failures})
            print(f"recipe: published JUnit {path}: {tests} tests, {failures} failed")

    def write_result(self):
        with open(os.path.join(self.work, "result.json"), "w") as out:
            json.dump({"jobs": self.jobs, "junit": self.junit, "artifacts": self.store}, out,
                      indent=2)
        failed = [job["name"] for job in self.jobs if job["status"] == "failure"]
        print("recipe: " + ", ".join(f"{job['name']}: {job['status']}" for job in self.jobs))
        return 1 if failed else 0


# GitHub Actions ---------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*([^}]*?)\s*\}\}")


def github_expand(text, context):
    def value(match):
        expression = match.group(1)
        if expression not in context:
            raise RecipeError(f"expression ${{{{ {expression} }}}}: the runner knows "
                              + ", ".join(sorted(context)))
        return str(context[expression])
    return EXPRESSION.sub(value, str(text))


def github_condition(step_or_job, failed):
    condition = str(step_or_job.get("if", "success()")).strip()
    condition = EXPRESSION.sub(lambda m: m.group(1), condition).strip()
    if condition == "always()":
        return True
    if condition == "success()":
        return not failed
    if condition == "failure()":
        return failed
    raise RecipeError(f"if: {condition}: the runner knows always(), success(), failure()")


def run_github(runner, workflow):
    env = workflow.get("env", {}) or {}
    jobs = workflow.get("jobs") or {}
    if not jobs:
        raise RecipeError("the workflow has no jobs")
    done = {}  # job id -> status
    order = []
    while len(order) < len(jobs):
        ready = [j for j in jobs if j not in order and all(
            n in order for n in as_list(jobs[j].get("needs")))]
        if not ready:
            raise RecipeError("the jobs' needs form a cycle or name a missing job")
        order.append(ready[0])
    for job_id in order:
        job = jobs[job_id]
        needs = as_list(job.get("needs"))
        needs_failed = any(done[n] != "success" for n in needs)
        matrix = (job.get("strategy") or {}).get("matrix") or {}
        for key in matrix:
            if key in ("include", "exclude") or not isinstance(matrix[key], list):
                raise RecipeError(f"job {job_id}: matrix.{key}: the runner expands lists only")
        combinations = [{}]
        for key, values in matrix.items():
            combinations = [dict(c, **{key: v}) for c in combinations for v in values]
        statuses = []
        for combination in combinations:
            name = job_id + ("" if not combination else
                             " (" + ", ".join(str(v) for v in combination.values()) + ")")
            if not github_condition(job, needs_failed):
                runner.jobs.append({"name": name, "status": "skipped"})
                statuses.append("skipped")
                continue
            status = run_github_job(runner, name, job, env, combination)
            statuses.append(status)
        done[job_id] = "success" if all(s == "success" for s in statuses) else (
            "failure" if "failure" in statuses else "skipped")


def run_github_job(runner, name, job, workflow_env, matrix):
    workspace = runner.workspace(name)
    log = workspace + ".log"
    context = {f"matrix.{k}": v for k, v in matrix.items()}
    variables = dict(workflow_env)
    variables.update(job.get("env") or {})
    variables.update({"GITHUB_WORKSPACE": workspace, "GITHUB_JOB": name})
    for key, value in list(variables.items()):
        context[f"env.{key}"] = value
    failed = False
    print(f"recipe: job {name}")
    for step in job.get("steps") or []:
        if not github_condition(step, failed):
            continue
        env = runner.environment({k: github_expand(v, context) for k, v in variables.items()})
        env.update({k: github_expand(v, context) for k, v in (step.get("env") or {}).items()})
        inputs = {k: github_expand(v, context) for k, v in (step.get("with") or {}).items()}
        if "run" in step:
            status = runner.shell(github_expand(step["run"], context), env, workspace, log)
        elif "uses" in step:
            status = github_action(runner, step["uses"], inputs, workspace)
        else:
            raise RecipeError(f"job {name}: a step with neither run nor uses")
        if status != 0:
            print(f"recipe: job {name}: step '{github_expand(step.get('name', step.get('uses', 'run')), context)}' "
                  f"failed ({status})")
            failed = True
    status = "failure" if failed else "success"
    runner.jobs.append({"name": name, "status": status, "workspace": workspace, "log": log})
    return status


def github_action(runner, uses, inputs, workspace):
    action = uses.split("@")[0]
    if action == "actions/checkout":
        runner.checkout(workspace)
        return 0
    if action == "actions/upload-artifact":
        name, path = inputs["name"], os.path.join(workspace, inputs["path"])
        target = os.path.join(runner.store, name)
        if os.path.exists(target):
            raise RecipeError(f"upload-artifact: an artifact named {name} exists already")
        if not os.path.exists(path):
            print(f"recipe: upload-artifact {name}: no file at {inputs['path']} (a warning)")
            return 0
        copy_into(path, target)
        return 0
    if action == "actions/download-artifact":
        destination = os.path.join(workspace, inputs.get("path", "."))
        if "name" in inputs:
            source = os.path.join(runner.store, inputs["name"])
            if not os.path.isdir(source):
                print(f"recipe: download-artifact: no artifact {inputs['name']}")
                return 1
            copy_into(source, destination)
            return 0
        names = sorted(n for n in os.listdir(runner.store)
                       if fnmatch.fnmatch(n, inputs.get("pattern", "*")))
        merge = str(inputs.get("merge-multiple", "false")).lower() == "true"
        for name in names:
            copy_into(os.path.join(runner.store, name),
                      destination if merge else os.path.join(destination, name))
        return 0
    if action == "mikepenz/action-junit-report":
        runner.publish_junit(inputs["report_paths"], workspace)
        return 0
    raise RecipeError(f"uses: {uses}: the runner knows actions/checkout, "
                      "actions/upload-artifact, actions/download-artifact, "
                      "mikepenz/action-junit-report")


def as_list(value):
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


# GitLab CI ---------------------------------------------------------------

GITLAB_GLOBAL = {"image", "stages", "variables", "default", "include", "workflow", "services",
                 "before_script", "after_script", "cache"}
GITLAB_JOB = {"stage", "script", "before_script", "extends", "needs", "parallel", "artifacts",
              "variables", "when", "image", "dependencies"}


def gitlab_resolve(pipeline, name, seen=()):
    job = pipeline[name]
    if name in seen:
        raise RecipeError(f"job {name}: extends loops")
    merged = {}
    for parent in as_list(job.get("extends")):
        if parent not in pipeline:
            raise RecipeError(f"job {name}: extends {parent}, which is not defined")
        merged.update(gitlab_resolve(pipeline, parent, seen + (name,)))
    for key, value in job.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = dict(merged[key], **value)
        else:
            merged[key] = value
    return merged


def run_gitlab(runner, pipeline):
    for key in pipeline:
        if key in ("include", "workflow", "services", "cache", "after_script"):
            raise RecipeError(f"{key}: the runner does not emulate it")
    stages = pipeline.get("stages") or ["build", "test", "deploy"]
    variables = pipeline.get("variables") or {}
    defaults = pipeline.get("default") or {}
    jobs = {}
    for name in pipeline:
        if name in GITLAB_GLOBAL or name.startswith("."):
            continue
        job = gitlab_resolve(pipeline, name)
        job.pop("extends", None)
        job["__name"] = name
        unknown = set(job) - GITLAB_JOB - {"__name"}
        if unknown:
            raise RecipeError(f"job {name}: {', '.join(sorted(unknown))}: the runner does not "
                              "emulate it")
        if job.get("stage", "test") not in stages:
            raise RecipeError(f"job {name}: stage {job.get('stage')} is not among {stages}")
        jobs[name] = job
    status_of = {}  # job name -> status (all its parallel instances)
    for stage in stages:
        for name, job in jobs.items():
            if job.get("stage", "test") != stage:
                continue
            earlier = [n for n, j in jobs.items()
                       if stages.index(j.get("stage", "test")) < stages.index(stage)]
            needs = [n if isinstance(n, str) else n["job"] for n in as_list(job.get("needs"))] \
                if "needs" in job else earlier
            for need in needs:
                if need not in jobs:
                    raise RecipeError(f"job {name}: needs {need}, which is not a job")
            upstream_failed = any(status_of.get(n) != "success" for n in needs)
            when = job.get("when", "on_success")
            if when not in ("on_success", "always"):
                raise RecipeError(f"job {name}: when: {when}: the runner knows on_success, always")
            parallel = job.get("parallel", 1)
            if not isinstance(parallel, int):
                raise RecipeError(f"job {name}: parallel: the runner knows a number only")
            statuses = []
            for index in range(1, parallel + 1):
                instance = name if parallel == 1 else f"{name} {index}/{parallel}"
                if upstream_failed and when != "always":
                    runner.jobs.append({"name": instance, "status": "skipped"})
                    statuses.append("skipped")
                    continue
                extra = {} if parallel == 1 else {"CI_NODE_INDEX": index,
                                                  "CI_NODE_TOTAL": parallel}
                statuses.append(run_gitlab_job(runner, instance, job, variables, defaults,
                                               needs, extra))
            status_of[name] = "success" if all(s == "success" for s in statuses) else (
                "failure" if "failure" in statuses else "skipped")


def run_gitlab_job(runner, name, job, pipeline_variables, defaults, needs, extra):
    """Runs one job (one of a parallel job's instances); its artifacts go to
    the store under the job's name and the instance's index."""
    workspace = runner.workspace(name)
    log = workspace + ".log"
    runner.checkout(workspace)
    # The artifacts of the jobs it needs, at the paths they had.
    for need in needs:
        for stored in sorted(glob.glob(os.path.join(runner.store, glob.escape(need), "*"))):
            copy_into(stored, workspace)
    variables = dict(pipeline_variables)
    variables.update(job.get("variables") or {})
    variables.update(extra)
    variables.update({"CI_PROJECT_DIR": workspace, "CI_JOB_NAME": name})
    env = runner.environment(variables)
    before = job.get("before_script", defaults.get("before_script", []))
    script = "\n".join(as_list(before) + as_list(job.get("script")))
    if not job.get("script"):
        raise RecipeError(f"job {name}: no script")
    print(f"recipe: job {name}")
    status = "success" if runner.shell(script, env, workspace, log) == 0 else "failure"
    artifacts = job.get("artifacts") or {}
    unknown = set(artifacts) - {"paths", "when", "reports"}
    if unknown:
        raise RecipeError(f"job {name}: artifacts: {', '.join(sorted(unknown))}: not emulated")
    if status == "success" or artifacts.get("when") == "always":
        target = os.path.join(runner.store, job["__name"], str(extra.get("CI_NODE_INDEX", 1)))
        for pattern in as_list(artifacts.get("paths")):
            matches = glob.glob(os.path.join(workspace, os.path.expandvars(pattern).rstrip("/")))
            if not matches:
                print(f"recipe: job {name}: artifacts path {pattern} matches nothing (a warning)")
            for path in matches:
                relative = os.path.relpath(path, workspace)
                if os.path.isdir(path):
                    copy_into(path, os.path.join(target, relative))
                else:
                    copy_into(path, os.path.join(target, os.path.dirname(relative)))
        for kind, pattern in (artifacts.get("reports") or {}).items():
            if kind != "junit":
                raise RecipeError(f"job {name}: artifacts.reports.{kind}: not emulated")
            runner.publish_junit(pattern, workspace)
    runner.jobs.append({"name": name, "status": status, "workspace": workspace, "log": log})
    return status


# Kubernetes ----------------------------------------------------------------

VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def envsubst(text, variables):
    """As gettext's envsubst: every $NAME and ${NAME} replaced, unset ones by ''."""
    return VARIABLE.sub(lambda m: variables.get(m.group(1) or m.group(2), ""), text)


def run_kubernetes(runner, text):
    variables = dict(os.environ)
    variables.update(runner.overrides)
    documents = [d for d in yaml.safe_load_all(envsubst(text, variables)) if d]
    for document in documents:
        if document.get("apiVersion") != "batch/v1" or document.get("kind") != "Job":
            raise RecipeError("expected batch/v1 Jobs only, got "
                              f"{document.get('apiVersion')} {document.get('kind')}")
        name = document["metadata"]["name"]
        spec = document["spec"]
        pod = spec["template"]["spec"]
        if pod.get("restartPolicy") not in ("Never", "OnFailure"):
            raise RecipeError(f"job {name}: a Job's pods need restartPolicy Never or OnFailure")
        indexed = spec.get("completionMode") == "Indexed"
        completions = spec.get("completions", 1)
        if not isinstance(completions, int) or completions < 1:
            raise RecipeError(f"job {name}: completions {completions!r}: expected a number >= 1")
        mounts = {}
        volumes = {v["name"]: v for v in pod.get("volumes") or []}
        for container in (pod.get("initContainers") or []) + pod["containers"]:
            for mount in container.get("volumeMounts") or []:
                if mount["name"] not in volumes:
                    raise RecipeError(f"job {name}: volume {mount['name']} is not declared")
                os.makedirs(mount["mountPath"], exist_ok=True)
        statuses = []
        for index in range(completions):
            instance = f"{name}-{index}" if indexed else name
            env = runner.environment({})
            if indexed:
                env["JOB_COMPLETION_INDEX"] = str(index)
            workspace = runner.workspace(instance)
            log = workspace + ".log"
            print(f"recipe: pod {instance}")
            status = "success"
            for container in (pod.get("initContainers") or []) + pod["containers"]:
                container_env = dict(env)
                container_env.update({e["name"]: str(e["value"]) for e in container.get("env") or []})
                command = container.get("command", []) + container.get("args", [])
                if not command:
                    raise RecipeError(f"job {name}: container {container['name']}: no command")
                process = subprocess.run(command, env=container_env, cwd=workspace,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                output = process.stdout.decode(errors="replace")
                with open(log, "a") as out:
                    out.write(output)
                sys.stdout.write(output)
                if process.returncode != 0:
                    status = "failure"
                    break
            runner.jobs.append({"name": instance, "status": status, "workspace": workspace,
                                "log": log})
            statuses.append(status)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ci", choices=["github", "gitlab", "kubernetes"])
    parser.add_argument("recipe")
    parser.add_argument("--work", required=True)
    parser.add_argument("--repository")
    parser.add_argument("--env", action="append", default=[], metavar="K=V")
    arguments = parser.parse_args()
    overrides = {}
    for assignment in arguments.env:
        key, equals, value = assignment.partition("=")
        if not equals or not key:
            print(f"run_recipe.py: --env {assignment}: expected NAME=VALUE", file=sys.stderr)
            return 2
        overrides[key] = value
    runner = Runner(arguments.work, arguments.repository, overrides)
    try:
        with open(arguments.recipe) as source:
            text = source.read()
        if arguments.ci == "kubernetes":
            run_kubernetes(runner, text)
        else:
            recipe = yaml.safe_load(text)
            if not isinstance(recipe, dict):
                raise RecipeError("expected a YAML mapping")
            (run_github if arguments.ci == "github" else run_gitlab)(runner, recipe)
    except (RecipeError, KeyError, yaml.YAMLError, ElementTree.ParseError) as error:
        print(f"run_recipe.py: {arguments.recipe}: {error}", file=sys.stderr)
        runner.write_result()
        return 2
    return runner.write_result()


if __name__ == "__main__":
    sys.exit(main())
