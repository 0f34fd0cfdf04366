package io.sumi.faults.driver;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The outcome of one fault run: the invariants counted at the end and the recovery time after
 * each fault.
 *
 * @param recoveryMillis per fault, the time from its end until every order committed before that
 *     moment was shipped and charged; -1 if that never happened within the run
 */
public record FaultReport(String name, boolean guard, long seed, int expectedOrders, int orders, int shipmentsMissing,
        int shipmentsDouble, int chargesMissing, int chargesDouble, int pending, int kills, int postgresRestarts,
        int brokerRestarts, int appRestarts, boolean quiescent, List<Long> recoveryMillis, long wallSeconds) {

    /** Whether every invariant holds: all orders made, each shipped once and charged once, nothing pending. */
    public boolean passed() {
        return orders == expectedOrders && shipmentsMissing == 0 && shipmentsDouble == 0 && chargesMissing == 0
                && chargesDouble == 0 && pending == 0;
    }

    /** Orders shipped or charged more than once. */
    public int doubles() {
        return shipmentsDouble + chargesDouble;
    }

    public String summaryLine() {
        List<Long> recovered = new ArrayList<>(recoveryMillis.stream().filter(ms -> ms >= 0).sorted().toList());
        long never = recoveryMillis.stream().filter(ms -> ms < 0).count();
        String recovery = recovered.isEmpty() ? "n/a"
                : recovered.get((recovered.size() - 1) / 2) + "/" + recovered.get(recovered.size() - 1);
        return String.format(Locale.ROOT,
                "FAULTS[%s]: orders=%d/%d shipments_missing=%d shipments_double=%d charges_missing=%d charges_double=%d pending=%d"
                        + " kills=%d pg_restarts=%d broker_restarts=%d app_restarts=%d recovery_ms(p50/max)=%s%s quiescent=%s"
                        + " wall_s=%d seed=%d result=%s",
                name, orders, expectedOrders, shipmentsMissing, shipmentsDouble, chargesMissing, chargesDouble, pending, kills,
                postgresRestarts, brokerRestarts, appRestarts, recovery, never > 0 ? " unrecovered=" + never : "", quiescent,
                wallSeconds, seed, passed() ? "PASS" : "FAIL");
    }
}
