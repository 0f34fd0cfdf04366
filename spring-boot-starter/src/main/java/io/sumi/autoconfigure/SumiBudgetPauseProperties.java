package io.sumi.autoconfigure;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Pausing of listeners bound to an exhausted budget, under {@code sumi.budgets.pause.*} (formerly
 * {@code sumi.budgets.pause.*}, which still binds with a warning): Kafka listener containers and
 * Spring Cloud Stream bindings are paused, RabbitMQ and JMS containers stopped, until the budget
 * can take calls again.
 *
 * @param enabled whether listeners are paused (else budget refusals are retried by the error
 *     handler, never dead-lettered)
 * @param checkInterval how often paused listeners check whether their budget half-opened
 * @since 0.1.0
 */
@ConfigurationProperties("sumi.budgets.pause")
public record SumiBudgetPauseProperties(
        @DefaultValue("true") boolean enabled,
        @DefaultValue("1s") Duration checkInterval) {}
