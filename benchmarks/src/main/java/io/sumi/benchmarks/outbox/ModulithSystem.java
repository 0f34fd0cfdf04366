package io.sumi.benchmarks.outbox;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.kafka.autoconfigure.DefaultKafkaProducerFactoryCustomizer;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.core.task.TaskExecutor;
import org.springframework.kafka.support.ProducerListener;
import org.springframework.modulith.events.EventExternalizationConfiguration;
import org.springframework.modulith.events.IncompleteEventPublications;
import org.springframework.modulith.events.RoutingTarget;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The peer: Spring Modulith 2.0.3's JDBC event publication registry with Kafka externalization,
 * configured the way its reference documentation shows (Spring Boot auto-configuration,
 * {@code spring-modulith-starter-jdbc} + {@code spring-modulith-events-kafka}). A business
 * transaction publishes a {@link BenchEvent}; the registry stores the publication in that
 * transaction; after the commit the externalizer ({@code @ApplicationModuleListener}: async on the
 * application task executor) sends the mapped payload with {@code KafkaTemplate} and marks the
 * publication completed when the send future completes.
 *
 * <p>Backlog: a first context whose async executor drops the listener invocations leaves committed,
 * incomplete publications behind (as a crash or a broker outage would); a second context then
 * drains them with {@link IncompleteEventPublications#resubmitIncompletePublications}, Modulith's
 * own mechanism for incomplete publications.
 */
final class ModulithSystem implements OutboxSystem {

    static final String TOPIC = "bench.modulith";

    private final String jdbcUrl;
    private final String user;
    private final String bootstrapServers;
    private final LagRecorder recorder;
    private final int executorThreads;
    private final int poolSize;
    private final int lingerMs;
    private final boolean producerPerThread;
    private ConfigurableApplicationContext live;
    private ApplicationEventPublisher publisher;
    private TransactionTemplate tx;

    ModulithSystem(
            String jdbcUrl,
            String user,
            String bootstrapServers,
            LagRecorder recorder,
            int executorThreads,
            int poolSize,
            int lingerMs,
            boolean producerPerThread)
            throws Exception {
        this.lingerMs = lingerMs;
        this.producerPerThread = producerPerThread;
        this.jdbcUrl = jdbcUrl;
        this.user = user;
        this.bootstrapServers = bootstrapServers;
        this.recorder = recorder;
        this.executorThreads = executorThreads;
        this.poolSize = poolSize;
        // Creates event_publication (Modulith's v2 schema) and checks that the context starts.
        ensureLive();
    }

    /** The event; {@code payload} is what goes to Kafka (the externalization maps the event to it). */
    public record BenchEvent(String aggregateId, String payload) {}

    private Map<String, Object> properties(boolean dropAsync) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.main.banner-mode", "off");
        p.put("spring.datasource.url", jdbcUrl);
        p.put("spring.datasource.username", user);
        p.put("spring.datasource.hikari.maximum-pool-size", poolSize);
        p.put("spring.datasource.hikari.pool-name", dropAsync ? "modulith-loader" : "modulith");
        p.put("spring.kafka.bootstrap-servers", bootstrapServers);
        p.put("spring.kafka.producer.client-id", "bench-modulith");
        p.put("spring.kafka.producer.key-serializer", StringSerializer.class.getName());
        p.put("spring.kafka.producer.value-serializer", StringSerializer.class.getName());
        p.put("spring.kafka.producer.acks", "all");
        p.put("spring.kafka.producer.properties.linger.ms", String.valueOf(lingerMs));
        p.put("spring.modulith.events.kafka.enable-json", "false");
        p.put("spring.modulith.events.externalization.enabled", "true");
        p.put("spring.modulith.events.jdbc.schema-initialization.enabled", "true");
        p.put("spring.modulith.events.republish-outstanding-events-on-restart", "false");
        p.put("spring.task.execution.pool.core-size", executorThreads);
        p.put("spring.task.execution.pool.max-size", executorThreads);
        // Its context sees only its own auto-configuration: Modulith creates its table itself
        // (schema-initialization above), so Flyway (on the benchmarks' class path for the Kafka
        // benchmark) stays off, and Sumi's starter (on the class path too) is excluded: it would
        // insist on its ledger table in Modulith's database.
        p.put("spring.flyway.enabled", "false");
        p.put("spring.autoconfigure.exclude", String.join(",", sumiAutoConfigurations()));
        p.put("bench.drop-async", String.valueOf(dropAsync));
        p.put("bench.producer-per-thread", String.valueOf(producerPerThread));
        return p;
    }

    /** Every auto-configuration Sumi's jars declare (their {@code AutoConfiguration.imports}). */
    static List<String> sumiAutoConfigurations() {
        List<String> names = new ArrayList<>();
        try {
            Enumeration<URL> imports = ModulithSystem.class
                    .getClassLoader()
                    .getResources("META-INF/spring/org.springframework.boot.autoconfigure.AutoConfiguration.imports");
            while (imports.hasMoreElements()) {
                try (InputStream in = imports.nextElement().openStream()) {
                    new String(in.readAllBytes(), StandardCharsets.UTF_8)
                            .lines()
                            .map(String::strip)
                            .filter(name -> name.startsWith("io.sumi."))
                            .forEach(names::add);
                }
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        if (names.isEmpty()) {
            throw new IllegalStateException("Found no auto-configuration of Sumi's starter on the class path");
        }
        return names;
    }

    private ConfigurableApplicationContext start(boolean dropAsync) {
        return new SpringApplicationBuilder(ModulithApp.class)
                .web(WebApplicationType.NONE)
                .properties(properties(dropAsync))
                .initializers(context -> context.getBeanFactory().registerSingleton("lagRecorder", recorder))
                .logStartupInfo(false)
                .run();
    }

    private void ensureLive() {
        if (live == null) {
            live = start(false);
            publisher = live;
            tx = new TransactionTemplate(live.getBean(PlatformTransactionManager.class));
        }
    }

    private void stopLive() {
        if (live != null) {
            live.close();
            live = null;
        }
    }

    @Override
    public String name() {
        return "Spring Modulith";
    }

    @Override
    public String settings() {
        return "spring-modulith 2.0.3 JDBC registry (schema v2, completion-mode UPDATE) + Kafka externalization,"
                + " @ApplicationModuleListener on the Boot task executor with " + executorThreads + " threads,"
                + " serialize-externalization false (parallel sends), Hikari pool " + poolSize
                + ", KafkaTemplate producer: idempotent, acks=all, linger.ms " + lingerMs
                + (producerPerThread
                        ? ", one producer per executor thread (DefaultKafkaProducerFactory.setProducerPerThread)"
                        : ", one shared producer (Boot default)");
    }

    private Connection connection() throws Exception {
        return DriverManager.getConnection(jdbcUrl, user, null);
    }

    @Override
    public void truncate() throws Exception {
        try (Connection connection = connection();
                Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE event_publication");
            statement.execute("ANALYZE event_publication");
        }
    }

    @Override
    public void loadBacklog(String phase, int rows, int aggregates) throws Exception {
        stopLive();
        try (ConfigurableApplicationContext loader = start(true)) {
            TransactionTemplate loaderTx = new TransactionTemplate(loader.getBean(PlatformTransactionManager.class));
            int chunk = 1000;
            for (int from = 0; from < rows; from += chunk) {
                int start = from;
                loaderTx.executeWithoutResult(status -> {
                    for (int seq = start; seq < Math.min(rows, start + chunk); seq++) {
                        String aggregate = Payloads.aggregate(seq, aggregates);
                        loader.publishEvent(new BenchEvent(aggregate, Payloads.create(phase, seq, aggregate)));
                    }
                });
            }
        }
        try (Connection connection = connection();
                Statement statement = connection.createStatement()) {
            statement.execute("ANALYZE event_publication");
        }
    }

    @Override
    public void startDrain() {
        ensureLive();
        IncompleteEventPublications incomplete = live.getBean(IncompleteEventPublications.class);
        Thread drain =
                new Thread(() -> incomplete.resubmitIncompletePublications(publication -> true), "modulith-resubmit");
        drain.setDaemon(true);
        drain.start();
    }

    @Override
    public void startLive() {
        ensureLive();
    }

    @Override
    public long undispatched() throws Exception {
        try (Connection connection = connection();
                Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery(
                        "SELECT count(*) FROM event_publication WHERE completion_date IS NULL")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Override
    public void appendOne(String phase, long seq, String aggregateId) {
        tx.executeWithoutResult(status ->
                publisher.publishEvent(new BenchEvent(aggregateId, Payloads.create(phase, seq, aggregateId))));
    }

    @Override
    public void close() {
        stopLive();
    }

    @SpringBootConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class ModulithApp {

        @Bean
        EventExternalizationConfiguration eventExternalizationConfiguration() {
            return EventExternalizationConfiguration.externalizing()
                    .select(event -> event instanceof BenchEvent)
                    .route(
                            BenchEvent.class,
                            event -> RoutingTarget.forTarget(TOPIC).andKey(event.aggregateId()))
                    .mapping(BenchEvent.class, BenchEvent::payload)
                    .build();
        }

        /** Boot's KafkaTemplate takes this listener instead of its logging one: it reports every ack. */
        @Bean
        ProducerListener<Object, Object> kafkaProducerListener(LagRecorder lagRecorder) {
            return new ProducerListener<>() {
                @Override
                public void onSuccess(ProducerRecord<Object, Object> record, RecordMetadata metadata) {
                    lagRecorder.acked((String) record.value());
                }
            };
        }

        /**
         * Tuning: one producer (so one network thread) per executor thread. Modulith marks a
         * publication completed in a REQUIRES_NEW transaction inside the send future's callback, i.e. on
         * the producer's single network thread; with one shared producer every completion (and every
         * later ack) waits behind the previous one's commit.
         */
        @Bean
        @ConditionalOnProperty(name = "bench.producer-per-thread", havingValue = "true")
        DefaultKafkaProducerFactoryCustomizer producerPerThread() {
            return factory -> factory.setProducerPerThread(true);
        }

        /** Only in the backlog loader: the externalizer's async invocations are dropped, leaving publications incomplete. */
        @Bean(name = "taskExecutor")
        @ConditionalOnProperty(name = "bench.drop-async", havingValue = "true")
        TaskExecutor droppingTaskExecutor() {
            return task -> {};
        }
    }
}
