package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.store.LedgerMetrics;
import io.sumi.store.ProcessedMessageStore;
import java.time.Clock;
import java.time.Duration;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;

/**
 * Registers the ledger's per-consumer gauges ({@link LedgerMetrics}) once the context is up, when
 * every {@code @IdempotentHandler} (and so every consumer name) is known. Not a {@code MeterBinder}
 * bean: Boot may bind those before the handlers' beans exist.
 */
final class LedgerMetricsRegistrar implements SmartInitializingSingleton {

    private final ConfigurableListableBeanFactory beanFactory;
    private final ObjectProvider<ProcessedMessageStore> store;
    private final ObjectProvider<MeterRegistry> registry;
    private final ObjectProvider<HandlerConsumers.ListenerNaming> listenerNaming;
    private final ObjectProvider<Clock> clock;
    private final Duration refreshInterval;
    private volatile @Nullable LedgerMetrics metrics;

    LedgerMetricsRegistrar(
            ConfigurableListableBeanFactory beanFactory,
            ObjectProvider<ProcessedMessageStore> store,
            ObjectProvider<MeterRegistry> registry,
            ObjectProvider<HandlerConsumers.ListenerNaming> listenerNaming,
            ObjectProvider<Clock> clock,
            Duration refreshInterval) {
        this.beanFactory = beanFactory;
        this.store = store;
        this.registry = registry;
        this.listenerNaming = listenerNaming;
        this.clock = clock;
        this.refreshInterval = refreshInterval;
    }

    @Override
    public void afterSingletonsInstantiated() {
        MeterRegistry meterRegistry = registry.getIfUnique();
        ProcessedMessageStore ledger = store.getIfUnique();
        if (meterRegistry == null || ledger == null) {
            return;
        }
        Set<String> consumers = HandlerConsumers.of(beanFactory, listenerNaming.getIfAvailable());
        LedgerMetrics ledgerMetrics =
                new LedgerMetrics(ledger, consumers, refreshInterval, clock.getIfUnique(Clock::systemUTC));
        ledgerMetrics.bindTo(meterRegistry);
        this.metrics = ledgerMetrics;
    }

    /** The gauges' source, once registered. */
    @Nullable
    LedgerMetrics metrics() {
        return metrics;
    }
}
