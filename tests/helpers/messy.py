"""Labelled memories for the dream's checks: a messy 30-memory directory, and pairs for calibration."""

from __future__ import annotations

from pathlib import Path

#: (file, name, description, type, body)
PARAPHRASES = [
    (("deploy_friday.md", "deploy-day", "Deploys go out on Friday afternoons", "project",
      "Production deploys happen on Friday afternoons after the QA sign-off."),
     ("deploy_schedule.md", "deploy-schedule", "We ship to production Friday afternoon", "project",
      "We deploy to production every Friday afternoon, once QA has signed off.")),
    (("user_tabs.md", "tabs", "The user wants tabs for indentation", "feedback",
      "Indent with tabs, not spaces, in every file of this repository."),
     ("indent_style.md", "indentation", "Indentation: tabs rather than spaces", "feedback",
      "The user asked for tab indentation instead of spaces across the repository.")),
    (("ci_flaky.md", "flaky-ci", "The CI integration suite is flaky on the payments tests", "project",
      "The payments integration tests fail intermittently in CI; rerun them before investigating."),
     ("payments_flaky.md", "payments-tests-flaky", "Payments integration tests flake in CI", "project",
      "Intermittent failures in the payments integration tests on CI: rerun first, investigate only if they fail twice.")),
    (("grafana.md", "grafana-dashboards", "Latency dashboards live in Grafana under team-api", "reference",
      "Request latency dashboards are in Grafana, folder team-api."),
     ("dashboards.md", "latency-dashboards", "Where the API latency dashboards are (Grafana team-api)", "reference",
      "The API latency dashboards: Grafana, folder team-api, board p99 latency.")),
]

#: Pairs that must not be reported as near-duplicates.
DISTINCT = [
    (("staging_rate_limit.md", "staging rate limit", "Rate limit of the staging API gateway", "reference",
      "The gateway allows 100 requests per minute per key."),
     ("prod_rate_limit.md", "prod rate limit", "Rate limit of the production API gateway", "reference",
      "The gateway allows 100 requests per minute per key.")),
    (("user_role.md", "user-role", "The user is a data scientist new to Go", "user",
      "The user is a data scientist; they know Python well and are learning Go."),
     ("go_errors.md", "go-errors", "Wrap Go errors with %w", "feedback",
      "In Go code wrap errors with fmt.Errorf and %w so callers can use errors.Is.")),
    (("db_migrations.md", "db-migrations", "Migrations run with alembic before deploys", "project",
      "Database migrations are applied with alembic upgrade head before each deploy."),
     ("deploy_friday.md", "deploy-day", "Deploys go out on Friday afternoons", "project",
      "Production deploys happen on Friday afternoons after the QA sign-off.")),
    (("linear.md", "linear-project", "Bugs are tracked in Linear project INGEST", "reference",
      "Pipeline bugs are tracked in the Linear project INGEST."),
     ("grafana.md", "grafana-dashboards", "Latency dashboards live in Grafana under team-api", "reference",
      "Request latency dashboards are in Grafana, folder team-api.")),
]

#: The rest of the messy directory: distinct memories, some with planted problems.
OTHERS = [
    ("merge_freeze.md", "merge-freeze", "Merge freeze until 2026-03-12 for the mobile release", "project",
     "Merge freeze until 2026-03-12 for the mobile release; only release-critical fixes land."),
    ("launch.md", "launch", "Public launch planned for March 30, 2026", "project",
     "The public launch is planned for March 30, 2026, with the beta ending 12 Mar 2026."),
    ("roadmap.md", "roadmap", "The v3 API ships in 2099-01-15", "project",
     "The v3 API is scheduled for 2099-01-15; the v2 API stays until then."),
    ("oncall.md", "oncall", "Alice is on call", "project",
     "Alice took over the on-call rotation yesterday and hands over next week."),
    ("release_notes.md", "release-notes", "Release notes are due soon", "project",
     "Release notes are due in two days; the changelog was started last Thursday."),
    ("pg_port.md", "postgres-port", "Local Postgres port for the dev database", "project",
     "The dev database is Postgres on port 5432."),
    ("pg_port_new.md", "postgres-dev-port", "Dev Postgres database port", "project",
     "The dev Postgres database listens on port 5433 since the docker change."),
    ("pnpm.md", "package-manager", "Use pnpm for JavaScript packages", "feedback",
     "Always use pnpm for installing JavaScript packages in the web app."),
    ("npm.md", "package-manager-npm", "Package manager for the JavaScript web app", "feedback",
     "Never use pnpm in the web app; install JavaScript packages with npm."),
    ("style_semicolons.md", "semicolons", "Always use semicolons in TypeScript", "feedback",
     "Always end TypeScript statements with semicolons."),
    ("test_runner.md", "test-runner", "Run tests with pytest -x", "feedback",
     "Run the test suite with pytest -x so it stops at the first failure."),
    ("sentry.md", "sentry", "Errors are reported to Sentry project web-frontend", "reference",
     "Frontend errors go to the Sentry project web-frontend."),
    ("user_prefs.md", "user-terse", "The user prefers terse answers", "user",
     "The user wants short answers without summaries at the end."),
    ("user_tz.md", "user-timezone", "The user works from Lisbon (UTC+0/+1)", "user",
     "The user is in Lisbon; schedule things in Lisbon time."),
    ("feature_flags.md", "feature-flags", "Feature flags are managed in LaunchDarkly", "reference",
     "Feature flags live in LaunchDarkly, environment production and staging."),
    ("code_review.md", "code-review", "Two approvals are needed on main", "project",
     "Pull requests to main need two approvals, one from the platform team."),
]


def memory_text(name: str, description: str, type_: str, body: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\ntype: {type_}\n---\n\n{body}\n"


def write(root: Path, spec: tuple) -> str:
    rel, name, description, type_, body = spec
    (root / rel).write_text(memory_text(name, description, type_, body), encoding="utf-8")
    return rel


def messy_dir(root: Path, index_name: str) -> list[str]:
    """A 30-memory directory with near-duplicates, stale and relative dates and contradictions; the relpaths."""
    root.mkdir(parents=True, exist_ok=True)
    specs = {s[0]: s for pair in PARAPHRASES + DISTINCT for s in pair}
    specs.update({s[0]: s for s in OTHERS})
    rels = [write(root, s) for s in specs.values()]
    (root / index_name).write_text("".join(f"- [{specs[r][1]}]({r}) — {specs[r][2]}\n" for r in sorted(rels)))
    return rels
