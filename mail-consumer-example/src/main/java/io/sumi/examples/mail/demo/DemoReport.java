package io.sumi.examples.mail.demo;

import io.sumi.examples.support.DemoLauncher;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * What the demo did: from the database (orders, outbox rows, Sumi's ledger), the SMTP server's
 * mailboxes, Sumi's Micrometer meters ({@code outbox.*}, {@code sumi.messages}) and the
 * dead-letter topic.
 *
 * @param orders the order service's side
 * @param outbox the outbox's side
 * @param broker what the demo published past the outbox
 * @param mails what the SMTP server received
 * @param consumer the idempotent consumer's side
 * @param timing how long it took
 * @param timedOut whether the wait for the last message ran out
 */
public record DemoReport(
        Orders orders, Outbox outbox, Broker broker, Mails mails, Consumer consumer, Timing timing, boolean timedOut)
        implements DemoLauncher.Report {

    /**
     * What the order writers did.
     *
     * @param placed orders the demo placed
     * @param writers threads that placed them
     * @param ordersPerSecond the pace they were placed at (0: as fast as the writers could)
     * @param committed orders whose transaction committed
     * @param rolledBack orders whose transaction rolled back (a write failed after the outbox append)
     * @param orderRows rows in the {@code orders} table
     * @param rolledBackOrderRows rows in {@code orders} of the rolled-back orders
     */
    public record Orders(
            int placed,
            int writers,
            int ordersPerSecond,
            int committed,
            int rolledBack,
            long orderRows,
            long rolledBackOrderRows) {}

    /**
     * What the outbox holds and what its dispatcher did.
     *
     * @param rows outbox rows of the mail topic
     * @param rowsOfRolledBackOrders of them, rows of rolled-back orders
     * @param rowsMatchingOrders rows whose id is the one the order service returned for its order
     * @param dispatched rows dispatched with outcome {@code SENT}
     * @param pending rows not dispatched yet (nor parked)
     * @param parked rows parked
     * @param dispatchedCounter {@code outbox.dispatched{outcome=sent}}
     * @param sendFailures {@code outbox.send.failures}
     * @param lagP50 created → acknowledged, from the rows' {@code created_at} and {@code dispatched_at}
     * @param lagP95 the same, 95th percentile
     * @param lagP99 the same, 99th percentile
     * @param lagMax the same, the longest
     * @param timerCount rows the {@code outbox.dispatch.latency} timer recorded
     * @param timerP95 its 95th percentile, or {@code null} when the registry computes none
     */
    public record Outbox(
            long rows,
            long rowsOfRolledBackOrders,
            long rowsMatchingOrders,
            long dispatched,
            long pending,
            long parked,
            long dispatchedCounter,
            long sendFailures,
            Duration lagP50,
            Duration lagP95,
            Duration lagP99,
            Duration lagMax,
            long timerCount,
            @Nullable Duration timerP95) {}

    /**
     * The copies the demo's broker side added.
     *
     * @param concurrentCopies copies of dispatched mail requests sent at once to the next partition
     * @param lateCopies copies sent again later
     * @param poisonMessages messages sent without a key
     */
    public record Broker(int concurrentCopies, int lateCopies, int poisonMessages) {

        public int copies() {
            return concurrentCopies + lateCopies;
        }
    }

    /**
     * What the mail server received.
     *
     * @param received mails the SMTP server received
     * @param distinctKeys distinct {@code Idempotency-Key} headers among them
     * @param ordersMailedOnce committed orders with exactly one mail, under their outbox id, about them
     * @param ordersMailedTwice committed orders with more than one mail
     * @param ordersNotMailed committed orders without a mail
     * @param unexpected mails with no key, or a key that is no committed order's outbox id, or
     *     about another order than the key's
     * @param rolledBackMailed mails about a rolled-back order
     */
    public record Mails(
            int received,
            int distinctKeys,
            int ordersMailedOnce,
            int ordersMailedTwice,
            int ordersNotMailed,
            int unexpected,
            int rolledBackMailed) {}

    /**
     * What the consumer side did.
     *
     * @param processed Sumi: handler ran and completed
     * @param duplicatesSkipped Sumi: key already done, handler not called
     * @param busyRetries Sumi: key held by another consumer thread at that moment; retried
     * @param handlerFailures Sumi: handler threw; claim released and retried
     * @param rejected Sumi: no usable key; not retried
     * @param injectedFailures failures the demo injected (greylisting)
     * @param greylistedOrders orders whose mail went to the greylisting domain
     * @param deadLettered records that reached the dead-letter topic
     * @param ledgerRows the listener's rows in Sumi's ledger, by status
     */
    public record Consumer(
            long processed,
            long duplicatesSkipped,
            long busyRetries,
            long handlerFailures,
            long rejected,
            int injectedFailures,
            int greylistedOrders,
            int deadLettered,
            Map<String, Long> ledgerRows) {

        public Consumer {
            ledgerRows = Map.copyOf(ledgerRows);
        }
    }

    /**
     * Where the demo's time went.
     *
     * @param startup JVM start to the demo's start (services and Spring context)
     * @param placing the demo's start to the last order placed
     * @param total the demo's start to every message handled
     */
    public record Timing(Duration startup, Duration placing, Duration total) {}

    /** Every committed order mailed exactly once, under its outbox id, and nothing else mailed. */
    public boolean everyOrderMailedOnce() {
        return mails.received == orders.committed
                && mails.ordersMailedOnce == orders.committed
                && mails.ordersMailedTwice == 0
                && mails.ordersNotMailed == 0
                && mails.unexpected == 0;
    }

    /** The rolled-back orders left no order row, no outbox row and no mail. */
    public boolean rolledBackLeftNothing() {
        return orders.rolledBackOrderRows == 0 && outbox.rowsOfRolledBackOrders == 0 && mails.rolledBackMailed == 0;
    }

    /** One outbox row per committed order, every one dispatched, none parked. */
    public boolean outboxDrained() {
        return orders.orderRows == orders.committed
                && outbox.rows == orders.committed
                && outbox.rowsMatchingOrders == orders.committed
                && outbox.dispatched == orders.committed
                && outbox.pending == 0
                && outbox.parked == 0;
    }

    public boolean poisonDeadLettered() {
        return consumer.deadLettered == broker.poisonMessages;
    }

    /** Everything above, in time. */
    @Override
    public boolean ok() {
        return !timedOut
                && everyOrderMailedOnce()
                && rolledBackLeftNothing()
                && outboxDrained()
                && poisonDeadLettered();
    }

    /** The summary the demo prints. */
    @Override
    public String format() {
        StringBuilder out = new StringBuilder();
        String rule = "=".repeat(78);
        out.append('\n').append(rule).append('\n');
        out.append(" Sumi mail consumer demo: summary\n");
        out.append(rule).append('\n');
        out.append(" Order service: order rows and outbox row in one transaction\n");
        line(
                out,
                "orders placed",
                orders.placed,
                orders.writers
                        + (orders.writers == 1 ? " writer thread, " : " writer threads, ")
                        + (orders.ordersPerSecond > 0
                                ? orders.ordersPerSecond + " per second"
                                : "as fast as they could"));
        line(out, "orders committed", orders.committed, orders.orderRows + " rows in orders");
        line(
                out,
                "orders rolled back",
                orders.rolledBack,
                "a line the database refused, after outbox.append: " + orders.rolledBackOrderRows + " order rows, "
                        + outbox.rowsOfRolledBackOrders + " outbox rows");
        out.append(
                " Outbox: rows dispatched to the broker (Kafka, or RabbitMQ in the rabbitmq mode) by the starter's dispatcher\n");
        line(
                out,
                "outbox rows",
                outbox.rows,
                "topic mail.send, key = order id; " + outbox.rowsMatchingOrders + " with the id placeOrder returned");
        line(
                out,
                "dispatched",
                outbox.dispatched,
                "outbox.dispatched outcome=sent: " + outbox.dispatchedCounter + "; " + outbox.sendFailures
                        + " failed sends");
        line(
                out,
                "pending / parked",
                outbox.pending + " / " + outbox.parked,
                "rows not dispatched / parked after too many failures");
        line(
                out,
                "dispatch lag p95",
                millis(outbox.lagP95),
                "created -> acked; p50 " + millis(outbox.lagP50) + ", p99 " + millis(outbox.lagP99) + ", max "
                        + millis(outbox.lagMax));
        line(
                out,
                "",
                "",
                "(outbox.dispatch.latency: " + outbox.timerCount + " rows"
                        + (outbox.timerP95 == null ? "" : ", p95 " + millis(outbox.timerP95)) + ")");
        out.append(" Broker: copies and poison the demo published past the outbox\n");
        line(
                out,
                "copies published",
                broker.copies(),
                String.format(
                        Locale.ROOT,
                        "%.0f %% of the dispatched records again, same outbox-id:",
                        100.0 * broker.copies() / Math.max(1, outbox.dispatched)));
        line(
                out,
                "",
                "",
                broker.concurrentCopies + " at once (next partition / same queue), " + broker.lateCopies + " later");
        line(out, "keyless messages", broker.poisonMessages, "no outbox-id, no idempotency-key");
        out.append(" Consumer: @IdempotentHandler, key = outbox-id\n");
        line(
                out,
                "mails sent (SMTP)",
                mails.received,
                "received by the SMTP server; " + mails.distinctKeys + " distinct Idempotency-Key headers");
        line(out, "handler runs completed", consumer.processed, "sumi.messages outcome=processed");
        line(out, "duplicates skipped", consumer.duplicatesSkipped, "outcome=duplicate: acknowledged, no mail");
        line(out, "busy retries", consumer.busyRetries, "outcome=busy: another thread was sending that key; retried");
        line(
                out,
                "handler failures retried",
                consumer.handlerFailures,
                "outcome=failed: " + consumer.injectedFailures + " first attempts refused by greylisting ("
                        + consumer.greylistedOrders + " orders)");
        line(out, "rejected (no key)", consumer.rejected, "outcome=rejected: not retried");
        line(out, "dead-lettered", consumer.deadLettered, "records on the dead-letter topic (queue)");
        line(
                out,
                "ledger rows",
                consumer.ledgerRows.values().stream().mapToLong(Long::longValue).sum(),
                "Sumi's processed_messages: "
                        + new TreeMap<>(consumer.ledgerRows)
                                .entrySet().stream()
                                        .map(e -> e.getValue() + " " + e.getKey())
                                        .collect(Collectors.joining(", ")));
        out.append(String.format(
                Locale.ROOT,
                "  %-24s %s to start (in-process Kafka, PostgreSQL, SMTP and Spring),\n",
                "time",
                seconds(timing.startup)));
        out.append(String.format(
                Locale.ROOT,
                "  %-24s %s to place the orders, %s until all handled\n",
                "",
                seconds(timing.placing),
                seconds(timing.total)));
        out.append(rule).append('\n');
        if (timedOut) {
            out.append("  TIMED OUT: not every message was handled within sumi.demo.timeout\n");
        }
        out.append("  every order's mail sent exactly once: ")
                .append(everyOrderMailedOnce() ? "OK" : "FAILED")
                .append(" (")
                .append(mails.received)
                .append(" mails, ")
                .append(orders.committed)
                .append(" orders, ")
                .append(mails.ordersMailedOnce)
                .append(" mailed once under their outbox-id");
        if (mails.ordersMailedTwice > 0 || mails.ordersNotMailed > 0 || mails.unexpected > 0) {
            out.append("; ")
                    .append(mails.ordersMailedTwice)
                    .append(" twice, ")
                    .append(mails.ordersNotMailed)
                    .append(" never, ")
                    .append(mails.unexpected)
                    .append(" unexpected mails");
        }
        out.append(")\n");
        out.append("  rolled-back orders left nothing: ")
                .append(rolledBackLeftNothing() ? "OK" : "FAILED")
                .append(" (")
                .append(orders.rolledBack)
                .append(" orders: ")
                .append(orders.rolledBackOrderRows)
                .append(" order rows, ")
                .append(outbox.rowsOfRolledBackOrders)
                .append(" outbox rows, ")
                .append(mails.rolledBackMailed)
                .append(" mails)\n");
        out.append("  outbox drained: ")
                .append(outboxDrained() ? "OK" : "FAILED")
                .append(" (")
                .append(outbox.rows)
                .append(" rows, ")
                .append(outbox.dispatched)
                .append(" dispatched, ")
                .append(outbox.pending)
                .append(" pending, ")
                .append(outbox.parked)
                .append(" parked)\n");
        out.append("  keyless messages dead-lettered: ")
                .append(poisonDeadLettered() ? "OK" : "FAILED")
                .append(" (")
                .append(consumer.deadLettered)
                .append(" of ")
                .append(broker.poisonMessages)
                .append(")\n");
        out.append(rule).append('\n');
        out.append("  RESULT: ").append(ok() ? "OK" : "FAILED").append('\n');
        return out.toString();
    }

    private static void line(StringBuilder out, String label, long value, String note) {
        line(out, label, Long.toString(value), note);
    }

    private static void line(StringBuilder out, String label, String value, String note) {
        out.append(String.format(Locale.ROOT, "  %-24s %8s   %s", label, value, note)
                        .stripTrailing())
                .append('\n');
    }

    private static String millis(Duration duration) {
        long micros = duration.toNanos() / 1000;
        return micros < 10_000
                ? String.format(Locale.ROOT, "%.1f ms", micros / 1000.0)
                : String.format(Locale.ROOT, "%d ms", Math.round(micros / 1000.0));
    }

    private static String seconds(Duration duration) {
        return String.format(Locale.ROOT, "%.1f s", duration.toMillis() / 1000.0);
    }
}
