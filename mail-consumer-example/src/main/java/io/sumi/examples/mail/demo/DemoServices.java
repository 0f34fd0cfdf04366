package io.sumi.examples.mail.demo;

import com.icegreen.greenmail.util.GreenMail;
import com.icegreen.greenmail.util.ServerSetup;
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
 * The demo's in-process services: a single-node KRaft Kafka broker, PostgreSQL and an SMTP server
 * (GreenMail), each on a free port. Started in parallel; closed in reverse.
 */
public final class DemoServices implements AutoCloseable {

    /** The name of the singleton under which the demo registers these services. */
    public static final String BEAN_NAME = "sumiDemoServices";

    private static final Logger log = LoggerFactory.getLogger(DemoServices.class);

    private final EmbeddedKafkaKraftBroker kafka;
    private final EmbeddedPostgres postgres;
    private final GreenMail greenMail;

    private DemoServices(EmbeddedKafkaKraftBroker kafka, EmbeddedPostgres postgres, GreenMail greenMail) {
        this.kafka = kafka;
        this.postgres = postgres;
        this.greenMail = greenMail;
    }

    /** Starts the three services; if one fails, stops those that started and throws. */
    public static DemoServices start() {
        long start = System.nanoTime();
        CompletableFuture<EmbeddedPostgres> postgres = CompletableFuture.supplyAsync(DemoServices::startPostgres);
        CompletableFuture<GreenMail> greenMail = CompletableFuture.supplyAsync(DemoServices::startGreenMail);
        EmbeddedKafkaKraftBroker kafka = null;
        try {
            kafka = startKafka();
            DemoServices services = new DemoServices(kafka, postgres.join(), greenMail.join());
            log.info("Demo services started in {} ms: Kafka {}, PostgreSQL on port {}, SMTP on port {}",
                    (System.nanoTime() - start) / 1_000_000, services.kafkaBootstrapServers(), services.postgres.getPort(),
                    services.smtpPort());
            return services;
        }
        catch (RuntimeException ex) {
            closeQuietly(kafka);
            postgres.thenAccept(DemoServices::closeQuietly);
            greenMail.thenAccept(DemoServices::closeQuietly);
            throw ex instanceof CompletionException && ex.getCause() instanceof RuntimeException cause ? cause : ex;
        }
    }

    private static EmbeddedKafkaKraftBroker startKafka() {
        EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
        // The broker publishes its address as a system property; keep it off spring.kafka.bootstrap-servers,
        // which decides whether the demo runs at all.
        broker.brokerListProperty("sumi.demo.kafka.bootstrap-servers");
        broker.afterPropertiesSet();
        return broker;
    }

    private static EmbeddedPostgres startPostgres() {
        try {
            return EmbeddedPostgres.builder().start();
        }
        catch (IOException ex) {
            throw new UncheckedIOException("Could not start the embedded PostgreSQL: " + ex.getMessage(), ex);
        }
    }

    private static GreenMail startGreenMail() {
        GreenMail server = new GreenMail(new ServerSetup(0, "127.0.0.1", ServerSetup.PROTOCOL_SMTP));
        server.start();
        return server;
    }

    public String kafkaBootstrapServers() {
        return kafka.getBrokersAsString();
    }

    public int smtpPort() {
        return greenMail.getSmtp().getPort();
    }

    /** The SMTP server, with every mail it received. */
    public GreenMail greenMail() {
        return greenMail;
    }

    /** Spring Boot properties that point the application at these services. */
    public Map<String, Object> springProperties() {
        Map<String, Object> properties = new LinkedHashMap<>();
        properties.put("spring.kafka.bootstrap-servers", kafkaBootstrapServers());
        properties.put("spring.datasource.url", postgres.getJdbcUrl("postgres", "postgres"));
        properties.put("spring.datasource.username", "postgres");
        properties.put("spring.datasource.password", "");
        properties.put("spring.mail.host", "127.0.0.1");
        properties.put("spring.mail.port", smtpPort());
        return properties;
    }

    @Override
    public void close() {
        closeQuietly(greenMail);
        closeQuietly(kafka);
        closeQuietly(postgres);
    }

    private static void closeQuietly(Object service) {
        if (service == null) {
            return;
        }
        try {
            if (service instanceof GreenMail mail) {
                mail.stop();
            }
            else if (service instanceof EmbeddedKafkaKraftBroker broker) {
                broker.destroy();
            }
            else if (service instanceof EmbeddedPostgres pg) {
                pg.close();
            }
        }
        catch (Exception ex) {
            log.warn("Could not stop {}: {}", service.getClass().getSimpleName(), ex.toString());
        }
    }
}
