package io.sumi.autoconfigure.actuate;

import io.sumi.autoconfigure.actuate.internal.SumiReadModels;
import java.util.Map;
import java.util.Objects;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * The ledger's health: {@code UP}, or the attention status ({@code sumi.health.attention-status},
 * {@code DEGRADED} by default) while rows are held for reconciliation (a lease-mode message whose
 * outcome is uncertain, waiting for an operator). Details: the held rows per consumer. One
 * {@code GROUP BY} over the {@code RECONCILE} rows (an index serves it on PostgreSQL; on MariaDB and
 * H2 the status index does).
 *
 * <p>The ledger is shared by every instance: keep this out of the liveness and readiness groups.
 */
public class SumiLedgerHealthIndicator implements HealthIndicator {

    private final SumiReadModels readModels;
    private final Status attention;

    public SumiLedgerHealthIndicator(SumiReadModels readModels, Status attention) {
        this.readModels = Objects.requireNonNull(readModels, "readModels");
        this.attention = Objects.requireNonNull(attention, "attention");
    }

    @Override
    public Health health() {
        Map<String, Long> held = readModels.reconciliationCounts();
        long total = held.values().stream().mapToLong(Long::longValue).sum();
        Health.Builder health = total > 0 ? Health.status(attention) : Health.up();
        health.withDetail("heldForReconciliation", total).withDetail("heldByConsumer", held);
        if (total > 0) {
            health.withDetail(
                    "action",
                    "check each with the provider, then POST /actuator/sumi/reconciliation/complete or /release"
                            + " (list: GET /actuator/sumi/reconciliation)");
        }
        return health.build();
    }
}
