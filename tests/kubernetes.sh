# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# The Kubernetes recipe (contrib/kubernetes/job.yaml) has the fields its
# README promises, and every trainer argument in it is an option the
# trainer knows. Kubernetes does not run here: this checks the manifest.
. "$top_srcdir/tests/lib.sh"
Y="$top_srcdir/contrib/kubernetes/job.yaml"
/usr/bin/python3 -c 'import yaml' 2>/dev/null || { fail "python3-yaml is missing (scripts/setup.sh installs it)"; finish; }

# q EXPR: a value of the manifest (Python expression over j).
q() { /usr/bin/python3 -c 'import sys, yaml; j = yaml.safe_load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$Y" "$1"; }

eq "an Indexed Job" "$(q '(j["kind"], j["spec"]["completionMode"])')" "('Job', 'Indexed')"
eq "every worker at once" "$(q 'j["spec"]["completions"] == j["spec"]["parallelism"]')" True
eq "restartPolicy Never (podFailurePolicy needs it)" "$(q 'j["spec"]["template"]["spec"]["restartPolicy"]')" Never
eq "the restart codes are ignored, on the trainer container" \
    "$(q '[(r["onExitCodes"]["containerName"], r["onExitCodes"]["operator"], sorted(r["onExitCodes"]["values"])) for r in j["spec"]["podFailurePolicy"]["rules"] if r["action"] == "Ignore" and "onExitCodes" in r]')" \
    "[('trainer', 'In', [42, 75, 143])]"
eq "a disruption is ignored" \
    "$(q '[c["type"] for r in j["spec"]["podFailurePolicy"]["rules"] if r["action"] == "Ignore" for c in r.get("onPodConditions", [])]')" \
    "['DisruptionTarget']"
C='[c for c in j["spec"]["template"]["spec"]["containers"] if c["name"] == "trainer"][0]'
eq "the trainer is PID 1 (exec form, no shell)" "$(q "$C[\"command\"]")" "['preempt-trainer']"
eq "the worker index is the completion index" "$(q "[a for a in $C[\"args\"] if a.startswith(\"--worker=\")]")" \
    "['--worker=\$(JOB_COMPLETION_INDEX)']"
eq "--workers is the number of completions" "$(q "\"--workers=%d\" % j[\"spec\"][\"completions\"] in $C[\"args\"]")" True
eq "the trainer's kill delay is the pod's grace period" \
    "$(q "\"--kill-delay-ms=%d\" % (1000 * j[\"spec\"][\"template\"][\"spec\"][\"terminationGracePeriodSeconds\"]) in $C[\"args\"]")" True
eq "one launch identity for the Job's pods" \
    "$(q "[e[\"valueFrom\"][\"fieldRef\"][\"fieldPath\"] for e in $C[\"env\"] if e[\"name\"] == \"PREEMPT_LAUNCH_ID\"]")" \
    "[\"metadata.labels['batch.kubernetes.io/controller-uid']\"]"
eq "the termination record goes where the library writes it by default" \
    "$(q "($C[\"terminationMessagePath\"], $C[\"terminationMessagePolicy\"])")" "('/dev/termination-log', 'File')"
for opt in $(q "' '.join(a.split('=')[0] for a in $C[\"args\"])"); do
    expect "the trainer knows $opt" sh -c "'$TRAINER' --help | grep -qE -- '^  $opt '"
done
finish
