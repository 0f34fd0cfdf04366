package io.sumi.examples.mail.demo;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The demo's settings, under {@code sumi.demo}.
 *
 * @param enabled whether the application runs as the demo (decided by {@link DemoModeInitializer} when unset)
 * @param orders how many orders the demo places through the order service, the rolled-back ones included
 * @param writers how many threads place them at once (the shop's request threads)
 * @param ordersPerSecond how many orders are placed per second (0: as fast as the writers can)
 * @param rolledBackOrders how many of the orders fail after the outbox append (a line the database
 *     refuses), so that their transaction rolls back
 * @param duplicateRatio the share of the dispatched mail requests that the demo publishes to the
 *     broker once more, with the same {@code outbox-id}
 * @param concurrentShare the share of those copies sent to another partition right after the
 *     dispatcher's send was acknowledged (the rest are sent again later)
 * @param failingOrders how many orders' mails fail on their first attempt (their recipient's
 *     server greylists it)
 * @param poisonMessages how many messages the demo publishes without a key, past the outbox (they
 *     must be dead-lettered)
 * @param timeout how long to wait for every message to be handled
 * @param seed the seed of the random plan (the same seed, the same orders and copies)
 */
@ConfigurationProperties("sumi.demo")
public record DemoProperties(
        @DefaultValue("false") boolean enabled,
        @DefaultValue("2000") int orders,
        @DefaultValue("4") int writers,
        @DefaultValue("500") int ordersPerSecond,
        @DefaultValue("3") int rolledBackOrders,
        @DefaultValue("0.3") double duplicateRatio,
        @DefaultValue("0.5") double concurrentShare,
        @DefaultValue("20") int failingOrders,
        @DefaultValue("2") int poisonMessages,
        @DefaultValue("2m") Duration timeout,
        @DefaultValue("42") long seed) {}
