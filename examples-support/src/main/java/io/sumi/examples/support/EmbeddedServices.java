package io.sumi.examples.support;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * A demo's in-process services: a single-node KRaft Kafka broker, PostgreSQL and the example's own
 * service (an SMTP server, a payment provider), each on a free port. Started in parallel; closed in
 * reverse order of dependence (the example's service, Kafka, PostgreSQL).
 *
 * <p>{@link #close()} stops every service even when one of them fails to stop, and reports every
 * failure: the first is thrown, the others are attached to it as suppressed exceptions.
 *
 * @param <S> the type of the example's own service
 */
// close() throws Exception: it stops services of any kind and reports their failures as they
// are, an interruption included.
@SuppressWarnings("try")
public final class EmbeddedServices<S> implements AutoCloseable {

    /** The name of the singleton under which {@link DemoModeInitializer} registers the services. */
    public static final String BEAN_NAME = "sumiDemoServices";

    /** The system property the broker publishes its address under: not {@code spring.kafka.bootstrap-servers}, which decides whether the demo runs. */
    static final String BROKER_LIST_PROPERTY = "sumi.demo.kafka.bootstrap-servers";

    private static final Logger log = LoggerFactory.getLogger(EmbeddedServices.class);

    /** Stops a service. */
    @FunctionalInterface
    public interface Stopper<S> {

        void stop(S service) throws Exception;
    }

    private final EmbeddedKafkaKraftBroker kafka;
    private final EmbeddedPostgres postgres;
    private final S service;
    private final Stopper<? super S> stopService;

    private EmbeddedServices(
            EmbeddedKafkaKraftBroker kafka, EmbeddedPostgres postgres, S service, Stopper<? super S> stopService) {
        this.kafka = kafka;
        this.postgres = postgres;
        this.service = service;
        this.stopService = stopService;
    }

    /**
     * Starts Kafka, PostgreSQL and the example's own service; if one fails to start, stops those
     * that started and throws the failure (with any failure to stop attached as suppressed).
     *
     * @param startService starts the example's own service (on another thread)
     * @param stopService stops it
     */
    public static <S> EmbeddedServices<S> start(Callable<? extends S> startService, Stopper<? super S> stopService) {
        long start = System.nanoTime();
        CompletableFuture<EmbeddedPostgres> postgres = CompletableFuture.supplyAsync(EmbeddedServices::startPostgres);
        CompletableFuture<S> service = CompletableFuture.supplyAsync(() -> call(startService));
        EmbeddedKafkaKraftBroker kafka = null;
        try {
            kafka = startKafka();
            EmbeddedServices<S> services = new EmbeddedServices<>(kafka, postgres.join(), service.join(), stopService);
            log.info(
                    "Demo services started in {} ms: Kafka {}, PostgreSQL on port {}",
                    (System.nanoTime() - start) / 1_000_000,
                    services.kafkaBootstrapServers(),
                    services.postgres.getPort());
            return services;
        } catch (RuntimeException ex) {
            RuntimeException failure =
                    ex instanceof CompletionException && ex.getCause() instanceof RuntimeException cause ? cause : ex;
            EmbeddedKafkaKraftBroker startedKafka = kafka;
            try {
                stopAll(
                        stopping(service.exceptionally(notStarted -> null).join(), stopService),
                        stopping(startedKafka, EmbeddedKafkaKraftBroker::destroy),
                        stopping(postgres.exceptionally(notStarted -> null).join(), EmbeddedPostgres::close));
            } catch (Exception stopFailure) {
                failure.addSuppressed(stopFailure);
            }
            throw failure;
        }
    }

    private static EmbeddedKafkaKraftBroker startKafka() {
        EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
        broker.brokerListProperty(BROKER_LIST_PROPERTY);
        broker.afterPropertiesSet();
        return broker;
    }

    private static EmbeddedPostgres startPostgres() {
        try {
            return EmbeddedPostgres.builder().start();
        } catch (IOException ex) {
            throw new UncheckedIOException("Could not start the embedded PostgreSQL: " + ex.getMessage(), ex);
        }
    }

    private static <T> T call(Callable<T> start) {
        try {
            return start.call();
        } catch (RuntimeException ex) {
            throw ex;
        } catch (Exception ex) {
            throw new IllegalStateException("Could not start a demo service: " + ex.getMessage(), ex);
        }
    }

    public String kafkaBootstrapServers() {
        return kafka.getBrokersAsString();
    }

    /** The example's own service (the SMTP server, the payment provider). */
    public S service() {
        return service;
    }

    /** Spring Boot properties that point the application at Kafka and PostgreSQL. */
    public Map<String, Object> springProperties() {
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("spring.kafka.bootstrap-servers", kafkaBootstrapServers());
        properties.put("spring.datasource.url", postgres.getJdbcUrl("postgres", "postgres"));
        properties.put("spring.datasource.username", "postgres");
        properties.put("spring.datasource.password", "");
        return properties;
    }

    /**
     * Stops the example's service, Kafka and PostgreSQL, each even when stopping another failed.
     *
     * @throws Exception the first failure to stop a service, with the others suppressed
     */
    @Override
    public void close() throws Exception {
        stopAll(
                stopping(service, stopService),
                stopping(kafka, EmbeddedKafkaKraftBroker::destroy),
                stopping(postgres, EmbeddedPostgres::close));
    }

    /** One step of shutting down. */
    @FunctionalInterface
    interface Step {

        void run() throws Exception;
    }

    /** A step that stops {@code service}, or does nothing when it never started. */
    static <T> Step stopping(@Nullable T service, Stopper<? super T> stopper) {
        return () -> {
            if (service == null) {
                return;
            }
            try {
                stopper.stop(service);
            } catch (Exception ex) {
                throw new IllegalStateException(
                        "Could not stop " + service.getClass().getSimpleName() + ": " + ex, ex);
            }
        };
    }

    /**
     * Runs every step, in order, whatever the others do.
     *
     * @throws Exception the first step's failure, with the later failures suppressed
     */
    static void stopAll(Step... steps) throws Exception {
        Exception first = null;
        for (Step step : steps) {
            try {
                step.run();
            } catch (Exception ex) {
                if (first == null) {
                    first = ex;
                } else {
                    first.addSuppressed(ex);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
