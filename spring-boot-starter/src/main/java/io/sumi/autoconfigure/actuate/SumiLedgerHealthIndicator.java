package io.sumi.autoconfigure.actuate;

import io.sumi.autoconfigure.actuate.internal.SumiReadModels;
import io.sumi.store.ConsumerLedgerStats;
import io.sumi.store.ProcessedMessageStore;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
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
 * <p>On a ledger that is not in the application's database (the Redis ledger,
 * {@code sumi.ledger.store=redis}) the counts come from the store itself
 * ({@link ProcessedMessageStore#consumerStats()}, a round trip to Redis), the details name the
 * store ({@code store}), and a store that does not answer makes the health {@code DOWN} with the
 * error.
 *
 * <p>The ledger is shared by every instance: keep this out of the liveness and readiness groups.
 */
public class SumiLedgerHealthIndicator implements HealthIndicator {

    private final Supplier<Map<String, Long>> heldByConsumer;
    private final @Nullable String store;
    private final Status attention;

    public SumiLedgerHealthIndicator(SumiReadModels readModels, Status attention) {
        Objects.requireNonNull(readModels, "readModels");
        this.heldByConsumer = readModels::reconciliationCounts;
        this.store = null;
        this.attention = Objects.requireNonNull(attention, "attention");
    }

    /**
     * The health of a ledger read through its store SPI (the Redis ledger's).
     *
     * @param storeName what the details call the store ({@code redis})
     * @since 0.1.0
     */
    public SumiLedgerHealthIndicator(ProcessedMessageStore store, String storeName, Status attention) {
        Objects.requireNonNull(store, "store");
        this.heldByConsumer = () -> held(store.consumerStats());
        this.store = Objects.requireNonNull(storeName, "storeName");
        this.attention = Objects.requireNonNull(attention, "attention");
    }

    private static Map<String, Long> held(Map<String, ConsumerLedgerStats> stats) {
        Map<String, Long> held = new TreeMap<>();
        stats.forEach((consumer, each) -> {
            if (each.heldForReconciliation() > 0) {
                held.put(consumer, each.heldForReconciliation());
            }
        });
        return held;
    }

    @Override
    public Health health() {
        Map<String, Long> held;
        if (store == null) {
            held = heldByConsumer.get();
        } else {
            try {
                held = heldByConsumer.get();
            } catch (RuntimeException ex) {
                return Health.down(ex).withDetail("store", store).build();
            }
        }
        long total = held.values().stream().mapToLong(Long::longValue).sum();
        Health.Builder health = total > 0 ? Health.status(attention) : Health.up();
        if (store != null) {
            health.withDetail("store", store);
        }
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
