package io.sumi.autoconfigure.monitoring;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checker behind {@code MonitoringAssetsIntegrationTests} catches what it must (negative
 * controls on a hand-written scrape), and the shipped rule file is well formed: structurally
 * always, and by promtool where it is installed (Debian package {@code prometheus}).
 */
class MonitoringAssetsTests {

    private static final Scrape SCRAPE = Scrape.parse("""
            # HELP sumi_messages_total Messages seen by idempotent handlers, by outcome
            # TYPE sumi_messages_total counter
            sumi_messages_total{consumer="mail",outcome="processed"} 3.0
            sumi_messages_total{consumer="mail",outcome="duplicate"} 1.0
            outbox_dispatch_latency_seconds_bucket{topic="mail.send",le="0.5"} 2
            outbox_dispatch_latency_seconds_bucket{topic="mail.send",le="+Inf"} 2
            outbox_pending 0.0
            sumi_ledger_unavailable_total{call="claim",consumer="mail"} 0.0
            sumi_leases_renewals_total{consumer="mail",result="late"} 0.0
            """);

    private final MetricNameChecker checker = new MetricNameChecker(SCRAPE);

    @Test
    void readsSelectorsAndGroupingLabelsOutOfFunctionsAndAggregations() {
        PromQl.Parsed parsed = PromQl.parse(
                "histogram_quantile(0.95, sum by (job, le) (rate(outbox_dispatch_latency_seconds_bucket{topic=\"a,b}\"}[5m])))"
                        + " > 30 and on(job) max(outbox_pending offset 5m) / sum without (x) (rate(sumi_messages_total[$__rate_interval]))");

        assertThat(parsed.selectors())
                .extracting(PromQl.Selector::metric)
                .containsExactly("outbox_dispatch_latency_seconds_bucket", "outbox_pending", "sumi_messages_total");
        assertThat(parsed.selectors().get(0).matchers()).containsExactly(new PromQl.LabelMatcher("topic", "=", "a,b}"));
        assertThat(parsed.groupingLabels()).containsExactlyInAnyOrder("job", "le", "x");
    }

    @Test
    void aCorrectExpressionHasNoProblems() {
        assertThat(checker.problems(
                        "ok",
                        "histogram_quantile(0.95, sum by (job, le) (rate(outbox_dispatch_latency_seconds_bucket[5m])))"
                                + " + sum by (consumer) (rate(sumi_messages_total{outcome=\"duplicate\"}[5m]))"))
                .isEmpty();
    }

    /** Negative controls: each kind of drift the integration test exists to catch. */
    @Test
    void aMisspeltMetricIsReported() {
        assertThat(checker.problems("alert X", "sum(rate(sumi_message_total[5m])) > 0"))
                .singleElement()
                .asString()
                .contains("alert X", "sumi_message_total is not in the scrape", "sumi_messages_total");
        assertThat(checker.problems("alert Y", "outbox_pending_total > 1000"))
                .as("Prometheus client 1.x exports the gauge outbox.pending.total as outbox_pending")
                .singleElement()
                .asString()
                .contains("outbox_pending_total is not in the scrape");
        assertThat(checker.problems("alert Z", "sum(increase(sumi_ledger_unavailable[5m])) > 0"))
                .as("a Micrometer counter is exported with _total")
                .singleElement()
                .asString()
                .contains("sumi_ledger_unavailable is not in the scrape", "sumi_ledger_unavailable_total");
        assertThat(checker.problems("alert W", "increase(sumi_lease_renewals_total{result=\"late\"}[15m]) > 0"))
                .singleElement()
                .asString()
                .contains("sumi_lease_renewals_total is not in the scrape", "sumi_leases_renewals_total");
    }

    @Test
    void aWrongLabelOrLabelValueIsReported() {
        assertThat(checker.problems("a", "sumi_messages_total{result=\"processed\"}"))
                .singleElement()
                .asString()
                .contains("has no label result");
        assertThat(checker.problems("b", "sumi_messages_total{outcome=\"duplicates\"}"))
                .singleElement()
                .asString()
                .contains("outcome=\"duplicates\"");
        assertThat(checker.problems("c", "sumi_messages_total{outcome=~\"busy|duplicate\"}"))
                .singleElement()
                .asString()
                .contains("outcome=\"busy\"");
        assertThat(checker.problems("d", "sum by (topic) (rate(sumi_messages_total[5m]))"))
                .singleElement()
                .asString()
                .contains("label topic");
    }

    @Test
    void theShippedRuleFileIsWellFormed() {
        Object rules = MonitoringAssets.load(MonitoringAssets.ALERTS);

        assertThat(MonitoringAssets.ruleFileProblems(rules)).isEmpty();
        assertThat(MonitoringAssets.alertExpressions(rules))
                .containsOnlyKeys(
                        "SumiOutboxPendingHigh",
                        "SumiOutboxDispatchLatencyHigh",
                        "SumiOutboxAttemptsHigh",
                        "SumiOutboxRowsParked",
                        "SumiOutboxCdcSlotInactive",
                        "SumiOutboxCdcSlotRetainedWalHigh",
                        "SumiBudgetOpenTooLong",
                        "SumiReconciliationHeld",
                        "SumiClaimStuck",
                        "SumiLeaseRenewalsLate",
                        "SumiLedgerUnreachable",
                        "SumiMessagesHeldLedgerUnreachable",
                        "SumiLedgerPruningFailing");
        MonitoringAssets.alertExpressions(rules)
                .forEach((alert, expr) ->
                        assertThat(PromQl.parse(expr).selectors()).as(alert).isNotEmpty());
    }

    @Test
    void theStructuralCheckRefusesABrokenRuleFile() {
        Object broken = new org.yaml.snakeyaml.Yaml().load("""
                groups:
                  - name: g
                    rules:
                      - alert: NoExpr
                        for: 5 minutes
                        labels: {severity: [warning]}
                        annotations: {summary: s}
                      - alert: NoExpr
                        expr: up == 0
                        severity: page
                """);

        assertThat(MonitoringAssets.ruleFileProblems(broken))
                .anySatisfy(problem -> assertThat(problem).contains("no expr"))
                .anySatisfy(problem -> assertThat(problem).contains("for is not a duration"))
                .anySatisfy(problem -> assertThat(problem).contains("labels entry severity"))
                .anySatisfy(problem -> assertThat(problem).contains("alert name used twice"))
                .anySatisfy(problem -> assertThat(problem).contains("unknown key severity"))
                .anySatisfy(problem -> assertThat(problem).contains("no summary annotation"));
    }

    @Test
    @SuppressWarnings("unchecked")
    void theShippedDashboardHasAQueryInEveryPanelOnTheDatasourceVariable() {
        Map<String, Object> dashboard = (Map<String, Object>) MonitoringAssets.load(MonitoringAssets.DASHBOARD);
        Map<String, String> expressions = MonitoringAssets.dashboardExpressions(dashboard);

        assertThat(expressions).hasSizeGreaterThan(20);
        for (Object panel : (List<Object>) dashboard.get("panels")) {
            Map<String, Object> map = (Map<String, Object>) panel;
            if (!"row".equals(map.get("type"))) {
                assertThat((List<Object>) map.get("targets"))
                        .as(String.valueOf(map.get("title")))
                        .isNotEmpty();
                assertThat(String.valueOf(map.get("datasource"))).contains("${datasource}");
            }
        }
    }

    /** promtool where installed; CI without it relies on the structural check above (and says so). */
    @Test
    void promtoolAcceptsTheRuleFileWhereItIsInstalled() throws IOException, InterruptedException {
        Path promtool = promtool();
        if (promtool == null) {
            return;
        }
        String output = run(promtool.toString(), "check", "rules", MonitoringAssets.ALERTS.toString());

        assertThat(output).contains("SUCCESS: 11 rules found");
    }

    /**
     * The alerts fire on the series they are about, after their {@code for}, and not on the healthy
     * series beside them ({@code monitoring/sumi-alerts-behaviour.yml}, promtool's rule unit tests).
     * promtool compares annotations exactly, so the tests run against a copy of the rules without
     * them (their templates are checked above).
     */
    @Test
    @SuppressWarnings("unchecked")
    void theAlertsFireOnTheSeriesTheyAreAboutWherePromtoolIsInstalled(@TempDir Path dir)
            throws IOException, InterruptedException {
        Path promtool = promtool();
        if (promtool == null) {
            return;
        }
        Map<String, Object> rules = (Map<String, Object>) MonitoringAssets.load(MonitoringAssets.ALERTS);
        for (Object group : (List<Object>) rules.get("groups")) {
            for (Object rule : (List<Object>) ((Map<String, Object>) group).get("rules")) {
                ((Map<String, Object>) rule).remove("annotations");
            }
        }
        Files.writeString(dir.resolve("sumi-alerts.yml"), new org.yaml.snakeyaml.Yaml().dump(rules));
        try (var behaviour = getClass().getResourceAsStream("/monitoring/sumi-alerts-behaviour.yml")) {
            Files.write(dir.resolve("behaviour.yml"), behaviour.readAllBytes());
        }

        String output = run(
                promtool.toString(),
                "test",
                "rules",
                dir.resolve("behaviour.yml").toString());

        assertThat(output).contains("SUCCESS").doesNotContain("FAILED");
    }

    private static @Nullable Path promtool() {
        Path promtool = Path.of(System.getenv().getOrDefault("SUMI_PROMTOOL", "/usr/bin/promtool"));
        if (!Files.isExecutable(promtool)) {
            System.out.println(
                    "promtool not installed (" + promtool + "): the rule file had the structural check only");
            return null;
        }
        return promtool;
    }

    private static String run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(output).isZero();
        return output;
    }
}
