package io.sumi.conformance.stream;

import io.sumi.conformance.Outgoing;
import io.sumi.conformance.RabbitQueues;
import io.sumi.conformance.Role;
import io.sumi.conformance.Scenario;
import io.sumi.testing.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Order;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * The catalogue on Spring Cloud Stream functions with the Rabbit binder on the shared RabbitMQ:
 * record bindings, the binder's retry (3 attempts) and {@code republish-to-dlq}; the held roles on
 * quorum queues with {@code x-delivery-limit} 3 and no binder retry, so that every hand-back is a
 * requeue the broker counts. The bindings are in {@code application-stream-rabbit.properties};
 * exchanges and queues are named per JVM run ({@code catalogue.run}) and deleted with the context.
 */
@Order(31)
@SpringBootTest(classes = {StreamCatalogueApp.class, StreamRabbitConformanceTests.Cleanup.class})
@ActiveProfiles("stream-rabbit")
class StreamRabbitConformanceTests extends StreamCatalogueTests {

    /** This JVM's suffix of every exchange and queue: runs never share one. */
    static final String RUN = UUID.randomUUID().toString().substring(0, 8);

    @DynamicPropertySource
    static void rabbit(DynamicPropertyRegistry registry) {
        TestRabbit.requireBroker();
        registry.add("spring.rabbitmq.host", () -> TestRabbit.HOST);
        registry.add("spring.rabbitmq.port", () -> TestRabbit.PORT);
        registry.add("catalogue.run", () -> RUN);
    }

    /** The exchange of {@code role}'s binding (its queue is {@code <exchange>.<slug>}). */
    static String exchange(Role role) {
        return "cat.stream." + role.slug() + "." + RUN;
    }

    @Autowired
    RabbitTemplate template;

    @Autowired
    AmqpAdmin admin;

    @Override
    public String id() {
        return "stream-rabbit";
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        return new HashMap<>(notApplicableToStream());
    }

    /** False as soon as a stop was asked (the container waits for its consumers after that). */
    @Override
    public boolean listenerRunning(Role role) {
        return RabbitQueues.active(container(role));
    }

    /** The consumers of the binding's queue: a stopped container has cancelled its own. */
    @Override
    public @Nullable String stillConsuming(Role role) {
        return RabbitQueues.consumers(admin, exchange(role) + "." + role.slug());
    }

    @Override
    public void send(Role role, List<Outgoing> messages) {
        for (Outgoing outgoing : messages) {
            MessageProperties properties = new MessageProperties();
            properties.setContentType(MessageProperties.CONTENT_TYPE_TEXT_PLAIN);
            if (outgoing.key() != null) {
                properties.setHeader("idempotency-key", outgoing.key());
            }
            template.send(
                    exchange(role),
                    role.slug(),
                    new Message(outgoing.payload().getBytes(StandardCharsets.UTF_8), properties));
        }
    }

    /** Deletes this run's queues and exchanges when the context closes (after the bindings stopped). */
    @TestConfiguration(proxyBeanMethods = false)
    static class Cleanup {

        @Bean
        DisposableBean catalogueQueueCleaner(AmqpAdmin admin) {
            return () -> {
                for (Role role : Role.values()) {
                    String exchange = exchange(role);
                    admin.deleteQueue(exchange + "." + role.slug());
                    admin.deleteQueue(exchange + "." + role.slug() + ".dlq");
                    admin.deleteExchange(exchange);
                }
                admin.deleteQueue("cat.stream.dlx." + RUN + ".dead-letters");
                admin.deleteExchange("cat.stream.dlx." + RUN);
            };
        }
    }
}
