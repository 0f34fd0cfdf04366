package io.sumi.autoconfigure;

import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

/**
 * Whether the outbox is dispatched from the log ({@link SumiOutboxCdcAutoConfiguration}), as the
 * polling side needs to know it without loading a CDC class: then the dispatcher polls at
 * {@code sumi.outbox.cdc.polling-interval} and appends do not wake it.
 */
final class OutboxCdcMode {

    private static final String OUTBOX_CDC_CLASS = "io.sumi.outbox.cdc.OutboxCdc";

    private OutboxCdcMode() {}

    /**
     * The polling interval under CDC, or {@code null} when CDC is off or its module is not on
     * {@code classLoader}'s class path.
     */
    static @Nullable Duration pollingInterval(Environment environment, @Nullable ClassLoader classLoader) {
        Binder binder = Binder.get(environment);
        if (!binder.bind("sumi.outbox.cdc.enabled", Boolean.class).orElse(false)
                || !ClassUtils.isPresent(OUTBOX_CDC_CLASS, classLoader)) {
            return null;
        }
        return binder.bind("sumi.outbox.cdc.polling-interval", Duration.class).orElse(Duration.ofSeconds(30));
    }

    /** The polling dispatcher's poll delay: {@code sumi.outbox.cdc.polling-delay} under CDC, else zero. */
    static Duration pollDelay(Environment environment, @Nullable ClassLoader classLoader) {
        if (pollingInterval(environment, classLoader) == null) {
            return Duration.ZERO;
        }
        return Binder.get(environment)
                .bind("sumi.outbox.cdc.polling-delay", Duration.class)
                .orElse(Duration.ofSeconds(10));
    }
}
