package io.sumi.autoconfigure.actuate;

import io.sumi.outbox.OutboxStats;
import io.sumi.outbox.OutboxTable;
import java.time.Duration;
import java.util.Objects;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * The outbox's health: {@code UP} while its backlog flows; the attention status
 * ({@code sumi.health.attention-status}, {@code DEGRADED} by default) when rows are parked or the
 * most overdue pending row has been due longer than {@code sumi.health.outbox.max-due-age}. Details:
 * pending, parked, the oldest due time and how overdue it is. One query
 * ({@link OutboxTable#stats()}).
 *
 * <p>The outbox is shared by every instance, so its state says nothing about this instance: keep
 * it out of the liveness and readiness groups (a stuck broker would otherwise restart or unplug
 * every pod at once); see the operations guide.
 */
public class SumiOutboxHealthIndicator implements HealthIndicator {

    private final OutboxTable outbox;
    private final Duration maxDueAge;
    private final Status attention;

    public SumiOutboxHealthIndicator(OutboxTable outbox, Duration maxDueAge, Status attention) {
        this.outbox = Objects.requireNonNull(outbox, "outbox");
        this.maxDueAge = Objects.requireNonNull(maxDueAge, "maxDueAge");
        this.attention = Objects.requireNonNull(attention, "attention");
    }

    @Override
    public Health health() {
        OutboxStats stats = outbox.stats();
        boolean late = stats.oldestPendingAge().compareTo(maxDueAge) > 0;
        Health.Builder health = stats.parked() > 0 || late ? Health.status(attention) : Health.up();
        health.withDetail("pending", stats.pending())
                .withDetail("parked", stats.parked())
                .withDetail("oldestPendingAge", stats.oldestPendingAge().toString())
                .withDetail("maxDueAge", maxDueAge.toString());
        if (stats.oldestDueAt() != null) {
            health.withDetail("oldestDueAt", stats.oldestDueAt().toString());
        }
        if (stats.parked() > 0) {
            health.withDetail(
                    "action", "re-drive the parked rows once their cause is fixed: POST /actuator/sumi/outbox/redrive");
        } else if (late) {
            health.withDetail(
                    "action", "the dispatcher is not keeping up, or is not running (sumi.outbox.dispatcher.*)");
        }
        return health.build();
    }
}
