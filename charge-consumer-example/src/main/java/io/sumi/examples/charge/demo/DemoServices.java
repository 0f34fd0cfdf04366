package io.sumi.examples.charge.demo;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * The demo's in-process services: a single-node KRaft Kafka broker, PostgreSQL and the fake
 * payment provider, each on a free port. Closed in reverse.
 */
public final class DemoServices implements AutoCloseable {

    /** The name of the singleton under which the demo registers these services. */
    public static final String BEAN_NAME = "sumiChargeDemoServices";

    private static final Logger log = LoggerFactory.getLogger(DemoServices.class);

    private final EmbeddedKafkaKraftBroker kafka;
    private final EmbeddedPostgres postgres;
    private final FakePaymentProvider provider;

    private DemoServices(EmbeddedKafkaKraftBroker kafka, EmbeddedPostgres postgres, FakePaymentProvider provider) {
        this.kafka = kafka;
        this.postgres = postgres;
        this.provider = provider;
    }

    /** Starts the services; if one fails, stops those that started and throws. */
    public static DemoServices start() {
        long start = System.nanoTime();
        CompletableFuture<EmbeddedPostgres> postgres = CompletableFuture.supplyAsync(DemoServices::startPostgres);
        EmbeddedKafkaKraftBroker kafka = null;
        FakePaymentProvider provider = null;
        try {
            provider = FakePaymentProvider.start();
            kafka = new EmbeddedKafkaKraftBroker(1, 1);
            // Keep the broker's address off spring.kafka.bootstrap-servers, which decides whether the demo runs.
            kafka.brokerListProperty("sumi.demo.kafka.bootstrap-servers");
            kafka.afterPropertiesSet();
            DemoServices services = new DemoServices(kafka, postgres.join(), provider);
            log.info("Demo services started in {} ms: Kafka {}, PostgreSQL on port {}, payment provider {}",
                    (System.nanoTime() - start) / 1_000_000, kafka.getBrokersAsString(), services.postgres.getPort(), provider.url());
            return services;
        }
        catch (RuntimeException ex) {
            if (kafka != null) {
                kafka.destroy();
            }
            if (provider != null) {
                provider.close();
            }
            postgres.thenAccept(pg -> {
                try {
                    pg.close();
                }
                catch (IOException ignored) {
                    // best effort
                }
            });
            throw ex instanceof CompletionException && ex.getCause() instanceof RuntimeException cause ? cause : ex;
        }
    }

    private static EmbeddedPostgres startPostgres() {
        try {
            return EmbeddedPostgres.builder().start();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not start the embedded PostgreSQL: " + ex.getMessage(), ex);
        }
    }

    public FakePaymentProvider provider() {
        return provider;
    }

    /** Spring Boot properties that point the application at these services. */
    public Map<String, Object> springProperties() {
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("spring.kafka.bootstrap-servers", kafka.getBrokersAsString());
        properties.put("spring.datasource.url", postgres.getJdbcUrl("postgres", "postgres"));
        properties.put("spring.datasource.username", "postgres");
        properties.put("spring.datasource.password", "");
        properties.put("charge-consumer.provider-url", provider.url());
        return properties;
    }

    @Override
    public void close() {
        try {
            provider.close();
            kafka.destroy();
            postgres.close();
        }
        catch (Exception ex) {
            log.warn("Could not stop the demo services: {}", ex.toString());
        }
    }
}
