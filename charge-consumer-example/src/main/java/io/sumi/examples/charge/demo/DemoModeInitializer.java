package io.sumi.examples.charge.demo;

import java.util.Map;

/**
 * The charge demo's mode: in-process Kafka and PostgreSQL (see
 * {@link io.sumi.examples.support.DemoModeInitializer}, which also states where the demo's defaults
 * stand among the property sources) and the in-process {@link FakePaymentProvider} that
 * {@code charge-consumer.provider-url} points at. Registered in {@code META-INF/spring.factories}.
 */
public class DemoModeInitializer extends io.sumi.examples.support.DemoModeInitializer<FakePaymentProvider> {

    /**
     * The demo's budget and timings: a budget of 40 charge calls per 4 seconds (instead of 500 an
     * hour), so that its window rolls within the demo; a breaker that opens when half of the last
     * 10 calls failed and waits 2 seconds; short leases and retries.
     */
    private static final Map<String, Object> DEMO_DEFAULTS = Map.ofEntries(
            Map.entry("sumi.budgets.payments.limit", "40"),
            Map.entry("sumi.budgets.payments.window", "4s"),
            Map.entry("sumi.budgets.payments.sliding-window-size", "10"),
            Map.entry("sumi.budgets.payments.minimum-number-of-calls", "6"),
            Map.entry("sumi.budgets.payments.wait-duration-in-open-state", "2s"),
            Map.entry("sumi.budgets.pause.check-interval", "100ms"),
            Map.entry("sumi.consumer.lease", "3s"),
            Map.entry("sumi.kafka.busy-retry-interval", "100ms"),
            Map.entry("charge-consumer.retry.interval", "100ms"),
            Map.entry("charge-consumer.retry.max-attempts", "30"));

    @Override
    protected FakePaymentProvider startService() {
        return FakePaymentProvider.start();
    }

    @Override
    protected void stopService(FakePaymentProvider provider) {
        provider.close();
    }

    @Override
    protected Map<String, Object> serviceProperties(FakePaymentProvider provider) {
        return Map.of("charge-consumer.provider-url", provider.url());
    }

    @Override
    protected Map<String, Object> demoDefaults() {
        return DEMO_DEFAULTS;
    }
}
