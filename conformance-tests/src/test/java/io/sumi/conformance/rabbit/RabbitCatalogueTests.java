package io.sumi.conformance.rabbit;

import io.sumi.conformance.CatalogueDriver;
import io.sumi.conformance.Outgoing;
import io.sumi.conformance.RabbitQueues;
import io.sumi.conformance.Role;
import io.sumi.testing.TestDatabase;
import io.sumi.testing.TestRabbit;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageBuilder;
import org.springframework.amqp.rabbit.core.RabbitAdmin;
import org.springframework.amqp.rabbit.core.RabbitTemplate;
import org.springframework.amqp.rabbit.listener.RabbitListenerEndpointRegistry;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.SmartLifecycle;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The RabbitMQ kinds' driver: one context ({@link RabbitCatalogueApp}) for record and consumer-batch listeners. */
@SpringBootTest(
        classes = RabbitCatalogueApp.class,
        properties = {
            "spring.main.banner-mode=off",
            "spring.flyway.locations=classpath:db/sumi/{vendor}",
            "spring.rabbitmq.listener.simple.prefetch=1"
        })
abstract class RabbitCatalogueTests extends CatalogueDriver {

    /** This JVM's queue-name suffix: runs never share a queue. */
    static final String RUN = UUID.randomUUID().toString().substring(0, 8);

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
        TestRabbit.requireBroker();
        registry.add("spring.rabbitmq.host", () -> TestRabbit.HOST);
        registry.add("spring.rabbitmq.port", () -> TestRabbit.PORT);
        registry.add("catalogue.run", () -> RUN);
    }

    @Autowired
    RabbitTemplate template;

    @Autowired
    RabbitListenerEndpointRegistry registry;

    @Autowired
    RabbitAdmin admin;

    abstract String shape();

    @Override
    public boolean batch() {
        return "batch".equals(shape());
    }

    @Override
    public void send(Role role, List<Outgoing> messages) {
        // SmartLifecycle: the container interface moved packages in Spring AMQP 4.1 (Boot 4.1).
        SmartLifecycle container = registry.getListenerContainer(listenerId(role));
        boolean hold = batch() && messages.size() > 1 && container != null;
        if (hold) {
            // One batch: every message is in the queue before the consumer starts again.
            container.stop();
        }
        for (Outgoing outgoing : messages) {
            int lane = batch() && (role == Role.LEASE || role == Role.PLAIN) ? outgoing.lane() : 0;
            MessageBuilder message = MessageBuilder.withBody(outgoing.payload().getBytes(StandardCharsets.UTF_8));
            if (outgoing.key() != null) {
                message.setHeader("idempotency-key", outgoing.key());
            }
            Message built = message.build();
            template.send("", RabbitCatalogueApp.queue(shape(), role, lane, RUN), built);
        }
        if (hold) {
            container.start();
        }
    }

    String listenerId(Role role) {
        return "rabbit-" + shape() + "-" + role.slug();
    }

    @Override
    public String consumer(Role role) {
        return listenerId(role);
    }

    /** False as soon as a stop was asked (the container waits for its consumers after that). */
    @Override
    public boolean listenerRunning(Role role) {
        return RabbitQueues.active(container(role));
    }

    /** The consumers of the listener's queue: a stopped container has cancelled its own. */
    @Override
    public @Nullable String stillConsuming(Role role) {
        return RabbitQueues.consumers(admin, RabbitCatalogueApp.queue(shape(), role, 0, RUN));
    }

    /**
     * With a callback the container's stop cancels its consumers at once and waits for its workers
     * (up to its shutdown timeout) on another thread.
     */
    @Override
    protected SmartLifecycle container(Role role) {
        return found(registry.getListenerContainer(listenerId(role)), listenerId(role));
    }
}
