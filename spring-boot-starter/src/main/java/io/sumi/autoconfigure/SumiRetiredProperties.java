package io.sumi.autoconfigure;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.commons.logging.Log;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.logging.DeferredLogFactory;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Keeps configuration written for an older Sumi honest: a removed {@code sumi.*} property fails
 * start-up with a message naming it and what replaces it; a renamed one still works under its old
 * name (with a warning naming the new one); the new name wins when both are set.
 *
 * <p>Why a failure and not only a metadata deprecation: Spring Boot ignores a property no
 * {@code @ConfigurationProperties} field binds, so a removed property would be dropped in silence
 * (an IDE shows the metadata's error level, but a build or a container does not). It runs as an
 * {@link EnvironmentPostProcessor} so that it acts before any auto-configuration binds, and so
 * before a failure about a value the application never set. Names are looked up with Boot's
 * relaxed binding ({@code SUMI_KAFKA_BUSYMAXWAIT} is found too). Every entry has a
 * {@code deprecation} entry in {@code META-INF/additional-spring-configuration-metadata.json}.
 */
class SumiRetiredProperties implements EnvironmentPostProcessor {

    /** A removed property and what the application should do instead. */
    record Removed(String name, String instead) {}

    /** A property whose meaning moved to {@code replacement}; the old name still sets it. */
    record Renamed(String name, String replacement) {}

    static final List<Removed> REMOVED = List.of(new Removed(
            "sumi.kafka.busy-max-wait",
            "a busy key on Kafka is retried every sumi.kafka.busy-retry-interval until it can run, so there is"
                    + " no longest wait to set; delete the property"));

    /**
     * {@code sumi.outbox.kafka.send-timeout} bounded a batch's send before the bound became the
     * dispatcher's (for every publisher). It remains the Kafka producer's own bound, and, when the
     * dispatcher's is not set, sets it, so that a configuration that was valid then (a Kafka send
     * timeout below half a short lease) still starts.
     */
    static final List<Renamed> RENAMED = List.of(
            new Renamed("sumi.outbox.kafka.send-timeout", "sumi.outbox.dispatcher.send-timeout"),
            // The Kafka binder's settings live under sumi.kafka, as Rabbit's and JMS's passthrough do.
            new Renamed("sumi.passthrough.kafka.enabled", "sumi.kafka.passthrough.enabled"),
            new Renamed("sumi.passthrough.kafka.header-name", "sumi.kafka.passthrough.header-name"),
            // Budgets have one root: pausing moved under it.
            new Renamed("sumi.budget-pause.enabled", "sumi.budgets.pause.enabled"),
            new Renamed("sumi.budget-pause.check-interval", "sumi.budgets.pause.check-interval"));

    static final String SOURCE = "sumiRenamedProperties";

    private final Log log;

    SumiRetiredProperties(DeferredLogFactory logFactory) {
        this.log = logFactory.getLog(SumiRetiredProperties.class);
    }

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        Binder binder = Binder.get(environment);
        for (Removed removed : REMOVED) {
            if (binder.bind(removed.name(), String.class).isBound()) {
                throw new IllegalStateException(
                        removed.name() + " was removed in Sumi 0.1.0 and is still set: " + removed.instead() + ".");
            }
        }
        if (environment.getPropertySources().contains(SOURCE)) {
            return;
        }
        Map<String, Object> filled = new LinkedHashMap<>();
        for (Renamed renamed : RENAMED) {
            String old = binder.bind(renamed.name(), String.class).orElse(null);
            if (old == null || binder.bind(renamed.replacement(), String.class).isBound()) {
                continue;
            }
            log.warn(renamed.name() + " is deprecated: set " + renamed.replacement() + " instead (taken from "
                    + renamed.name() + "=" + old + " meanwhile)");
            filled.put(renamed.replacement(), old);
        }
        if (!filled.isEmpty()) {
            // Lowest precedence: it only fills new names, which no other source sets.
            environment.getPropertySources().addLast(new MapPropertySource(SOURCE, filled));
        }
    }
}
