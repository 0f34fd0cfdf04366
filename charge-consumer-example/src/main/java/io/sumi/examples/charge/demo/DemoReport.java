package io.sumi.examples.charge.demo;

import io.sumi.examples.support.DemoLauncher;

/**
 * What the demo did, and whether it shows what it must: every order charged exactly once although
 * the provider was called more often, and the budget opened, paused and resumed the consumer
 * without dead-lettering anything.
 */
public record DemoReport(
        int orders,
        int messages,
        int duplicatesSent,
        int crashes,
        int outageRequests,
        int uniqueKeys,
        int providerCalls,
        int realCharges,
        int replays,
        int conflicts,
        long duplicatesSkipped,
        long openingsLimit,
        long openingsFailures,
        long pauses,
        long resumes,
        int deadLettered,
        int completedRows,
        long millis,
        String budget,
        long callsThisInstance,
        long callsSibling,
        long mostSpentInOneWindow,
        long limit)
        implements DemoLauncher.Report {

    public long budgetOpenings() {
        return openingsLimit + openingsFailures;
    }

    @Override
    public boolean ok() {
        return realCharges == uniqueKeys
                && uniqueKeys == orders
                && completedRows == orders
                && replays >= crashes
                && crashes > 0
                && budgetOpenings() >= 1
                && pauses >= 1
                && resumes >= 1
                && deadLettered == 0
                && conflicts == 0
                && callsSibling > 0
                && mostSpentInOneWindow <= limit;
    }

    @Override
    public String format() {
        StringBuilder out = new StringBuilder();
        out.append('\n')
                .append(
                        "Sumi charge demo: payment.charge -> @IdempotentHandler(budget = \"payments\") -> HTTP payment provider\n");
        out.append("  budget 'payments'                      ").append(budget).append('\n');
        line(out, "orders", orders, "");
        line(out, "messages sent to Kafka", messages, duplicatesSent + " duplicates");
        line(out, "crashes injected", crashes, "provider charged, JVM 'died' before the ledger's COMPLETED");
        line(out, "provider outage", outageRequests, "requests answered 503, retried by the error handler");
        line(out, "unique idempotency keys", uniqueKeys, "");
        line(out, "provider calls (HTTP requests)", providerCalls, "");
        line(out, "real charges", realCharges, realCharges == uniqueKeys ? "= unique keys" : "!= unique keys");
        line(out, "replays absorbed by the provider", replays, "same key, same parameters: first response, no charge");
        line(out, "key conflicts (4xx)", conflicts, "");
        line(out, "duplicates skipped by the ledger", duplicatesSkipped, "never reached the provider");
        line(
                out,
                "budget openings",
                budgetOpenings(),
                openingsLimit + " limit reached, " + openingsFailures + " failure rate");
        line(out, "budget permits on this instance", callsThisInstance, "incl. retries and permits given back unused");
        line(out, "budget calls on a second instance", callsSibling, "own pool and registry, same database");
        line(
                out,
                "most spent in one window (both)",
                mostSpentInOneWindow,
                "fleet budget: limit " + limit + " shared, never exceeded");
        line(out, "listener container pauses", pauses, "");
        line(out, "listener container resumes", resumes, "");
        line(out, "dead-lettered", deadLettered, "");
        line(out, "ledger rows COMPLETED", completedRows, "");
        out.append(String.format("  %-38s %d ms%n", "time", millis));
        out.append("  result: ")
                .append(
                        ok()
                                ? "OK: every order charged exactly once, two instances shared one budget, the budget"
                                        + " paused and resumed the consumer, nothing dead-lettered"
                                : "FAILED")
                .append('\n');
        return out.toString();
    }

    private static void line(StringBuilder out, String what, long value, String note) {
        out.append(String.format("  %-38s %6d%s%n", what, value, note.isEmpty() ? "" : "   (" + note + ")"));
    }
}
