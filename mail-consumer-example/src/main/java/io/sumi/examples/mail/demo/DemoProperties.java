package io.sumi.examples.mail.demo;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The demo's settings, under {@code sumi.demo}.
 *
 * @param enabled whether the application runs as the demo (decided by {@link DemoModeInitializer} when unset)
 * @param messages how many messages to publish in all
 * @param duplicateRatio the share of keyed messages that are copies of another one
 * @param concurrentShare the share of the copies sent to another partition at the same moment as
 *     the original (the rest are sent again later)
 * @param failingKeys how many keys fail on their first attempt (a simulated SMTP outage)
 * @param poisonMessages how many messages carry no key (they must be dead-lettered)
 * @param timeout how long to wait for every message to be handled
 * @param seed the seed of the random plan (the same seed, the same messages)
 */
@ConfigurationProperties("sumi.demo")
public record DemoProperties(@DefaultValue("false") boolean enabled, @DefaultValue("3000") int messages,
        @DefaultValue("0.3") double duplicateRatio, @DefaultValue("0.5") double concurrentShare,
        @DefaultValue("20") int failingKeys, @DefaultValue("2") int poisonMessages, @DefaultValue("2m") Duration timeout,
        @DefaultValue("42") long seed) {
}
