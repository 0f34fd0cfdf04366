package io.sumi.autoconfigure;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Sumi's health indicators (with Spring Boot Actuator), under {@code sumi.health}. Immutable.
 *
 * @param attentionStatus the status the outbox and ledger indicators report when an operator must
 *     act (parked rows, an outbox that falls behind, rows held for reconciliation). {@code DEGRADED}
 *     by default: answered with HTTP 200 and placed between {@code OUT_OF_SERVICE} and {@code UP} in
 *     the aggregate (the starter adds it to {@code management.endpoint.health.status.order} unless
 *     that is set); {@code DOWN} makes the health endpoint answer 503 instead
 * @param outbox the outbox indicator
 */
@ConfigurationProperties("sumi.health")
public record SumiHealthProperties(
        @DefaultValue("DEGRADED") String attentionStatus,
        @DefaultValue Outbox outbox) {

    /**
     * Health of the outbox.
     *
     * @param maxDueAge how long the most overdue pending row may have been due before the outbox
     *     needs attention
     */
    public record Outbox(@DefaultValue("5m") Duration maxDueAge) {}
}
