package io.sumi.examples.charge.demo;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.DefaultSingletonBeanRegistry;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Decides whether the application runs as the demo, and if so starts the demo's in-process
 * services before any bean exists and points Spring Boot at them.
 *
 * <p>Demo mode is {@code sumi.demo.enabled}; unset, it is on unless {@code spring.kafka.bootstrap-servers}
 * or {@code spring.datasource.url} is configured. Registered in {@code META-INF/spring.factories}.
 */
public class DemoModeInitializer implements ApplicationContextInitializer<ConfigurableApplicationContext> {

    static final String ENABLED = "sumi.demo.enabled";

    /**
     * The demo's budget and timings: a budget of 40 charge calls per 4 seconds (instead of 500 an
     * hour), so that its window rolls within the demo; a breaker that opens when half of the last
     * 10 calls failed and waits 2 seconds; short leases and retries. They override
     * {@code application.properties}, but not system properties, environment variables or
     * command-line arguments.
     */
    private static final Map<String, Object> DEMO_DEFAULTS = Map.ofEntries(
            Map.entry("sumi.budgets.payments.limit", "40"),
            Map.entry("sumi.budgets.payments.window", "4s"),
            Map.entry("sumi.budgets.payments.sliding-window-size", "10"),
            Map.entry("sumi.budgets.payments.minimum-number-of-calls", "6"),
            Map.entry("sumi.budgets.payments.wait-duration-in-open-state", "2s"),
            Map.entry("sumi.budget-pause.check-interval", "100ms"),
            Map.entry("sumi.consumer.lease", "3s"),
            Map.entry("sumi.kafka.busy-retry-interval", "100ms"),
            Map.entry("sumi.kafka.busy-max-wait", "30s"),
            Map.entry("charge-consumer.retry.interval", "100ms"),
            Map.entry("charge-consumer.retry.max-attempts", "30"));

    @Override
    public void initialize(ConfigurableApplicationContext context) {
        ConfigurableEnvironment environment = context.getEnvironment();
        if (context.getParent() != null || environment.getPropertySources().contains("sumiChargeDemoMode")) {
            return;
        }
        boolean demo = isDemo(environment);
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put(ENABLED, demo);
        if (!demo) {
            environment.getPropertySources().addFirst(new MapPropertySource("sumiChargeDemoMode", properties));
            return;
        }
        DemoServices services = DemoServices.start();
        properties.putAll(services.springProperties());
        environment.getPropertySources().addFirst(new MapPropertySource("sumiChargeDemoMode", properties));
        Map<String, Object> demoDefaults = new LinkedHashMap<>();
        DEMO_DEFAULTS.forEach((name, value) -> {
            if (!setOutsideFiles(environment, name)) {
                demoDefaults.put(name, value);
            }
        });
        environment.getPropertySources().addAfter("sumiChargeDemoMode", new MapPropertySource("sumiChargeDemoDefaults", demoDefaults));

        ConfigurableListableBeanFactory beanFactory = context.getBeanFactory();
        beanFactory.registerSingleton(DemoServices.BEAN_NAME, services);
        // Registered before every other bean, so destroyed after all of them.
        if (beanFactory instanceof DefaultSingletonBeanRegistry registry) {
            registry.registerDisposableBean(DemoServices.BEAN_NAME, services::close);
        }
    }

    /** Whether {@code name} is set on the command line, as a system property or as an environment variable. */
    private static boolean setOutsideFiles(ConfigurableEnvironment environment, String name) {
        for (String source : new String[] {"commandLineArgs", "systemProperties", "systemEnvironment"}) {
            var propertySource = environment.getPropertySources().get(source);
            if (propertySource != null && (propertySource.containsProperty(name)
                    || propertySource.containsProperty(name.toUpperCase(java.util.Locale.ROOT).replace('.', '_').replace("-", "")))) {
                return true;
            }
        }
        return false;
    }

    static boolean isDemo(ConfigurableEnvironment environment) {
        String enabled = environment.getProperty(ENABLED);
        if (enabled != null && !enabled.isBlank()) {
            return Boolean.parseBoolean(enabled.trim());
        }
        return !environment.containsProperty("spring.kafka.bootstrap-servers")
                && !environment.containsProperty("spring.datasource.url");
    }
}
