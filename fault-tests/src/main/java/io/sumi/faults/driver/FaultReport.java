package io.sumi.faults.driver;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The outcome of one fault run: the invariants counted at the end and the recovery time after
 * each fault.
 *
 * @param ledgerIncomplete orders whose message has no COMPLETED ledger row in one of the two
 *     consumers at the end (guarded run only): acknowledged without being completed
 * @param deadLettered RabbitMQ mode: messages in the dead-letter queues at the end (every message
 *     of the run is valid, so each one is an order effect that should have run); 0 on Kafka
 * @param unpublished Kafka: rows the outbox marked dispatched whose record the topic does not hold
 *     at the end (nothing sends a dispatched row again, so each one is lost); 0 on RabbitMQ
 * @param broker {@code kafka} or {@code rabbit}
 * @param dispatch {@code polling}, {@code cdc} or {@code cdc-confirm-first} (see
 *     {@link FaultScenario#dispatch()})
 * @param cdcSent CDC mode: rows sent from the log (a lower bound: those dispatched within the
 *     safety net's poll delay of their creation); 0 otherwise
 * @param duplicatesInjected messages the driver published a second time (same {@code outbox-id})
 * @param errorHandler the application's error handler ({@code retry} bean or {@code none})
 * @param recoveryMillis per fault, the time from its end until both consumers made progress again
 *     (the shipment count and the provider's request count both advanced); -1 if they never did
 * @param catchUpMillis per fault, the time from its end until every order committed before that
 *     moment was shipped and charged; -1 if that never happened within the run
 */
public record FaultReport(
        String name,
        boolean guard,
        long seed,
        int expectedOrders,
        int orders,
        int shipmentsMissing,
        int shipmentsDouble,
        int chargesMissing,
        int chargesDouble,
        int pending,
        int unpublished,
        int ledgerIncomplete,
        int deadLettered,
        String broker,
        String dispatch,
        int cdcSent,
        int duplicatesInjected,
        int kills,
        int postgresRestarts,
        int brokerRestarts,
        int appRestarts,
        String errorHandler,
        boolean quiescent,
        List<Long> recoveryMillis,
        List<Long> catchUpMillis,
        long wallSeconds) {

    /** Whether every invariant holds: all orders made, each shipped once and charged once, nothing pending. */
    public boolean passed() {
        return orders == expectedOrders
                && shipmentsMissing == 0
                && shipmentsDouble == 0
                && chargesMissing == 0
                && chargesDouble == 0
                && pending == 0
                && unpublished == 0
                && ledgerIncomplete == 0
                && deadLettered == 0;
    }

    /** Orders shipped or charged more than once. */
    public int doubles() {
        return shipmentsDouble + chargesDouble;
    }

    /**
     * Orders never shipped or never charged, and messages dead-lettered that should have run (rows
     * marked dispatched but never published show here as the orders they never shipped).
     */
    public int losses() {
        return shipmentsMissing + chargesMissing + deadLettered;
    }

    /** p50/max of the measured times, then how many never happened. */
    private static String percentiles(List<Long> millis) {
        List<Long> measured =
                new ArrayList<>(millis.stream().filter(ms -> ms >= 0).sorted().toList());
        int never = millis.size() - measured.size();
        String text = measured.isEmpty()
                ? "n/a"
                : measured.get((measured.size() - 1) / 2) + "/" + measured.get(measured.size() - 1);
        return never > 0 ? text + "(+" + never + " never)" : text;
    }

    public String summaryLine() {
        return String.format(
                Locale.ROOT,
                "FAULTS[%s]: orders=%d/%d shipments_missing=%d shipments_double=%d charges_missing=%d charges_double=%d pending=%d unpublished=%d ledger_incomplete=%d dead_lettered=%d"
                        + " dispatch=%s cdc_sent>=%d duplicates_injected=%d kills=%d pg_restarts=%d broker_restarts=%d app_restarts=%d error_handler=%s recovery_ms(p50/max)=%s catchup_ms(p50/max)=%s quiescent=%s"
                        + " wall_s=%d seed=%d result=%s",
                name,
                orders,
                expectedOrders,
                shipmentsMissing,
                shipmentsDouble,
                chargesMissing,
                chargesDouble,
                pending,
                unpublished,
                ledgerIncomplete,
                deadLettered,
                dispatch,
                cdcSent,
                duplicatesInjected,
                kills,
                postgresRestarts,
                brokerRestarts,
                appRestarts,
                errorHandler,
                percentiles(recoveryMillis),
                percentiles(catchUpMillis),
                quiescent,
                wallSeconds,
                seed,
                passed() ? "PASS" : "FAIL");
    }
}
