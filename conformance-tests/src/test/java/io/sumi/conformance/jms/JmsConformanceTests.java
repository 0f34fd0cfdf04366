package io.sumi.conformance.jms;

import io.sumi.conformance.CatalogueDriver;
import io.sumi.conformance.Outgoing;
import io.sumi.conformance.Role;
import io.sumi.conformance.Scenario;
import io.sumi.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Order;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jms.config.JmsListenerEndpointRegistry;
import org.springframework.jms.core.JmsTemplate;
import org.springframework.jms.listener.MessageListenerContainer;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The catalogue on {@code @JmsListener} (embedded Artemis, session-transacted containers). */
@Order(30)
@SpringBootTest(
        classes = JmsCatalogueApp.class,
        properties = {"spring.main.banner-mode=off", "spring.flyway.locations=classpath:db/sumi/{vendor}"})
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class JmsConformanceTests extends CatalogueDriver {

    @DynamicPropertySource
    static void services(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
    }

    @Autowired
    JmsTemplate template;

    @Autowired
    JmsListenerEndpointRegistry registry;

    @Override
    public String id() {
        return "jms";
    }

    @Override
    public boolean batch() {
        return false;
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        String noNack = "a @JmsListener has no per-message ack or nack: the session settles it (transacted, or"
                + " CLIENT_ACKNOWLEDGE, which acknowledges every message of the session) and a failure is a thrown"
                + " exception (the failure rows)";
        String noAsync = "Spring JMS acknowledges when the method returns and sends a returned future as a"
                + " reply: an async return type cannot defer the acknowledgement (Sumi must refuse it at"
                + " start-up, issue 19 A2, a start-up test)";
        return Map.of(
                Scenario.BAD_KEYS_IN_BATCH, "Spring JMS has no batch listeners",
                Scenario.MANUAL_ACK, noNack,
                Scenario.MANUAL_NACK, noNack,
                Scenario.MANUAL_REJECT, noNack,
                Scenario.MANUAL_MULTIPLE, noNack,
                Scenario.ASYNC_FAILED_FUTURE, noAsync,
                Scenario.ASYNC_FAILED_FUTURE_CONTROL, noAsync);
    }

    @Override
    public void send(Role role, List<Outgoing> messages) {
        for (Outgoing outgoing : messages) {
            template.convertAndSend("cat.jms." + role.slug(), outgoing.payload(), message -> {
                if (outgoing.key() != null) {
                    message.setStringProperty("idempotency_key", outgoing.key());
                }
                return message;
            });
        }
    }

    @Override
    public String consumer(Role role) {
        return "jms-" + role.slug();
    }

    // stillConsuming: a stopped DefaultMessageListenerContainer keeps its consumers (it is paused), by design.

    /** The container's stop returns at once; its callback runs when no consumer is busy any more. */
    @Override
    protected MessageListenerContainer container(Role role) {
        return found(registry.getListenerContainer(consumer(role)), consumer(role));
    }
}
