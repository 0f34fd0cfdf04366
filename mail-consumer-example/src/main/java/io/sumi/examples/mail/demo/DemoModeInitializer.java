package io.sumi.examples.mail.demo;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.DefaultSingletonBeanRegistry;
import org.springframework.boot.logging.LogLevel;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Decides whether the application runs as the demo, and if so starts the demo's in-process
 * services before any bean exists and points Spring Boot at them.
 *
 * <p>Demo mode is {@code sumi.demo.enabled}; unset, it is on unless {@code spring.kafka.bootstrap-servers}
 * or {@code spring.datasource.url} is configured (in any property source: file, environment
 * variable, command line). In demo mode, Kafka, the DataSource and SMTP always are the in-process
 * ones.
 *
 * <p>Registered in {@code META-INF/spring.factories}, so it runs for {@code SpringApplication} and
 * for {@code @SpringBootTest} alike.
 */
public class DemoModeInitializer implements ApplicationContextInitializer<ConfigurableApplicationContext> {

    static final String ENABLED = "sumi.demo.enabled";

    /**
     * Settings for the demo, below every configured source, so they can still be overridden:
     * quick retries, so that its dozens of retried messages do not take minutes; a short fetch
     * wait, so that a consumer that seeks back for a retry gets its records at once; and HELO
     * instead of EHLO towards the in-process SMTP server: a connection with EHLO took ~45 ms here
     * (its multi-line answer meets Nagle's algorithm and delayed ACKs), with HELO ~1.5 ms.
     */
    private static final Map<String, Object> DEMO_DEFAULTS = Map.of(
            "mail-consumer.retry.interval", "100ms",
            "sumi.kafka.busy-retry-interval", "50ms",
            "sumi.kafka.busy-max-wait", "90s",
            "sumi.consumer.lease", "60s",
            "spring.kafka.consumer.fetch-max-wait", "50ms",
            "spring.mail.properties.mail.smtp.ehlo", "false");

    @Override
    public void initialize(ConfigurableApplicationContext context) {
        ConfigurableEnvironment environment = context.getEnvironment();
        if (context.getParent() != null || environment.getPropertySources().contains("sumiDemoMode")) {
            return;
        }
        boolean demo = isDemo(environment);
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put(ENABLED, demo);
        if (!demo) {
            environment.getPropertySources().addFirst(new MapPropertySource("sumiDemoMode", properties));
            return;
        }
        // The in-process broker's own start-up and shutdown chatter is no news in the demo.
        LoggingSystem logging = LoggingSystem.get(context.getClassLoader());
        logging.setLogLevel("org.apache.kafka.controller", LogLevel.ERROR);
        logging.setLogLevel("org.apache.kafka.clients.NetworkClient", LogLevel.ERROR);
        DemoServices services = DemoServices.start();
        properties.putAll(services.springProperties());
        environment.getPropertySources().addFirst(new MapPropertySource("sumiDemoMode", properties));
        environment.getPropertySources().addLast(new MapPropertySource("sumiDemoDefaults", DEMO_DEFAULTS));

        ConfigurableListableBeanFactory beanFactory = context.getBeanFactory();
        beanFactory.registerSingleton(DemoServices.BEAN_NAME, services);
        // Registered before every other bean, so destroyed after all of them: the listener
        // containers, the producer and the DataSource are closed while the services still run.
        if (beanFactory instanceof DefaultSingletonBeanRegistry registry) {
            registry.registerDisposableBean(DemoServices.BEAN_NAME, services::close);
        }
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
