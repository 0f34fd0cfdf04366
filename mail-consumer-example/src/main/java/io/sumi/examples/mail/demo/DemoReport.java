package io.sumi.examples.mail.demo;

import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * What the demo did, from the SMTP server's mailboxes, Sumi's {@code sumi.messages} counters and
 * the dead-letter topic.
 *
 * @param published messages published in all
 * @param uniqueKeys distinct keys among them
 * @param concurrentDuplicates copies sent to another partition right after the original
 * @param lateDuplicates copies sent again later
 * @param poisonMessages messages without a key
 * @param failingKeys keys whose first attempt was made to fail
 * @param mailsSent mails the SMTP server received
 * @param distinctMailedKeys distinct {@code Idempotency-Key} headers among them
 * @param keysMailedTwice keys that were mailed more than once
 * @param keysNotMailed unique keys that were never mailed
 * @param unexpectedMails mails with no key, or a key that was not published
 * @param processed Sumi: handler ran and completed
 * @param duplicatesSkipped Sumi: key already done, handler not called
 * @param busyRetries Sumi: key held by another consumer thread at that moment; retried
 * @param handlerFailures Sumi: handler threw; claim released and retried
 * @param rejected Sumi: no usable key; not retried
 * @param injectedFailures failures the demo injected
 * @param deadLettered records that reached the dead-letter topic
 * @param ledgerRows the listener's rows in Sumi's ledger, by status
 * @param timedOut whether the wait for the last message ran out
 * @param startup JVM start to the demo's start (services and Spring context)
 * @param publishing the demo's start to the last record acknowledged by the broker
 * @param total the demo's start to every message handled
 */
public record DemoReport(int published, int uniqueKeys, int concurrentDuplicates, int lateDuplicates, int poisonMessages,
        int failingKeys, int mailsSent, int distinctMailedKeys, int keysMailedTwice, int keysNotMailed, int unexpectedMails,
        long processed, long duplicatesSkipped, long busyRetries, long handlerFailures, long rejected, int injectedFailures,
        int deadLettered, Map<String, Long> ledgerRows, boolean timedOut, Duration startup, Duration publishing, Duration total) {

    public DemoReport {
        ledgerRows = Map.copyOf(ledgerRows);
    }

    public int duplicatesPublished() {
        return concurrentDuplicates + lateDuplicates;
    }

    public boolean mailsMatchKeys() {
        return mailsSent == uniqueKeys && distinctMailedKeys == uniqueKeys && keysNotMailed == 0 && unexpectedMails == 0;
    }

    public boolean poisonDeadLettered() {
        return deadLettered == poisonMessages;
    }

    /** Every unique key mailed exactly once, nothing else mailed, every poison message dead-lettered, in time. */
    public boolean ok() {
        return !timedOut && mailsMatchKeys() && keysMailedTwice == 0 && poisonDeadLettered();
    }

    /** The summary the demo prints. */
    public String format() {
        StringBuilder out = new StringBuilder();
        String rule = "=".repeat(78);
        out.append('\n').append(rule).append('\n');
        out.append(" Sumi mail consumer demo: summary\n");
        out.append(rule).append('\n');
        line(out, "messages published", published, String.format(Locale.ROOT, "%.0f %% duplicates, %d without a key",
                100.0 * duplicatesPublished() / Math.max(1, published), poisonMessages));
        line(out, "unique keys", uniqueKeys, "");
        line(out, "duplicates published", duplicatesPublished(), concurrentDuplicates
                + " at the same moment on another partition, " + lateDuplicates + " later");
        line(out, "mails sent (SMTP)", mailsSent, "received by the SMTP server; " + distinctMailedKeys + " distinct Idempotency-Key headers");
        line(out, "handler runs completed", processed, "sumi.messages outcome=processed");
        line(out, "duplicates skipped", duplicatesSkipped, "outcome=duplicate: acknowledged, no mail");
        line(out, "busy retries", busyRetries, "outcome=busy: another thread was sending that key; retried");
        line(out, "handler failures retried", handlerFailures, "outcome=failed: " + injectedFailures
                + " simulated SMTP outages on the first attempt of " + failingKeys + " keys");
        line(out, "rejected (no key)", rejected, "outcome=rejected: not retried");
        line(out, "dead-lettered", deadLettered, "records on the dead-letter topic");
        line(out, "ledger rows", ledgerRows.values().stream().mapToLong(Long::longValue).sum(), "Sumi's processed_messages: "
                + new TreeMap<>(ledgerRows).entrySet().stream().map(e -> e.getValue() + " " + e.getKey()).collect(Collectors.joining(", ")));
        out.append(String.format(Locale.ROOT, "  %-26s %s to start (in-process Kafka, PostgreSQL, SMTP and Spring), "
                + "%s to publish, %s until all handled%n", "time", seconds(startup), seconds(publishing), seconds(total)));
        out.append(rule).append('\n');
        if (timedOut) {
            out.append("  TIMED OUT: not every message was handled within sumi.demo.timeout\n");
        }
        out.append("  mails sent == unique keys: ").append(mailsMatchKeys() ? "OK" : "FAILED")
                .append(" (").append(mailsSent).append(" == ").append(uniqueKeys).append(")\n");
        out.append("  no key mailed twice: ").append(keysMailedTwice == 0 ? "OK" : "FAILED (" + keysMailedTwice + " keys)").append('\n');
        out.append("  keyless messages dead-lettered: ").append(poisonDeadLettered() ? "OK" : "FAILED")
                .append(" (").append(deadLettered).append(" of ").append(poisonMessages).append(")\n");
        out.append(rule).append('\n');
        out.append("  RESULT: ").append(ok() ? "OK" : "FAILED").append('\n');
        return out.toString();
    }

    private static void line(StringBuilder out, String label, long value, String note) {
        out.append(String.format(Locale.ROOT, "  %-26s %6d   %s", label, value, note).stripTrailing()).append('\n');
    }

    private static String seconds(Duration duration) {
        return String.format(Locale.ROOT, "%.1f s", duration.toMillis() / 1000.0);
    }
}
