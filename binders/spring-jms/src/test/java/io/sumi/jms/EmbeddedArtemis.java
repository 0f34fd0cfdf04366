package io.sumi.jms;

import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.activemq.artemis.api.core.Message;
import org.apache.activemq.artemis.api.core.QueueConfiguration;
import org.apache.activemq.artemis.api.core.RoutingType;
import org.apache.activemq.artemis.api.core.SimpleString;
import org.apache.activemq.artemis.api.core.client.ActiveMQClient;
import org.apache.activemq.artemis.api.core.client.ClientMessage;
import org.apache.activemq.artemis.api.core.client.ClientProducer;
import org.apache.activemq.artemis.api.core.client.ClientSession;
import org.apache.activemq.artemis.api.core.client.ClientSessionFactory;
import org.apache.activemq.artemis.api.core.client.ServerLocator;
import org.apache.activemq.artemis.core.config.Configuration;
import org.apache.activemq.artemis.core.config.impl.ConfigurationImpl;
import org.apache.activemq.artemis.core.server.embedded.EmbeddedActiveMQ;
import org.apache.activemq.artemis.core.settings.impl.AddressSettings;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;

/**
 * An ActiveMQ Artemis broker in this JVM (in-VM transport, no persistence, no Docker), configured as
 * a production broker would be for Sumi: a redelivery limit of {@value #MAX_DELIVERY_ATTEMPTS}
 * deliveries, then the dead-letter address {@value #DLQ}.
 */
final class EmbeddedArtemis implements AutoCloseable {

    static final int MAX_DELIVERY_ATTEMPTS = 3;
    static final String DLQ = "DLQ";

    private final EmbeddedActiveMQ server = new EmbeddedActiveMQ();
    private final int serverId;

    EmbeddedArtemis(int serverId) {
        this.serverId = serverId;
    }

    EmbeddedArtemis start() throws Exception {
        Path home = Files.createTempDirectory("sumi-artemis-");
        Configuration configuration = new ConfigurationImpl()
                .setPersistenceEnabled(false)
                .setSecurityEnabled(false)
                .setJMXManagementEnabled(false)
                .addAcceptorConfiguration("in-vm", "vm://" + serverId)
                .addAddressSetting(
                        "#",
                        new AddressSettings()
                                .setMaxDeliveryAttempts(MAX_DELIVERY_ATTEMPTS)
                                .setRedeliveryDelay(0)
                                .setDeadLetterAddress(SimpleString.of(DLQ))
                                .setAutoCreateQueues(true)
                                .setAutoCreateAddresses(true))
                .addQueueConfiguration(QueueConfiguration.of(DLQ).setRoutingType(RoutingType.ANYCAST));
        configuration.setBrokerInstance(home.toFile());
        server.setConfiguration(configuration);
        server.start();
        return this;
    }

    /**
     * Consumers buffer about two messages (1 KiB), so the concurrent consumers of one queue share its
     * messages (the default 1 MiB lets the first consumer take them all).
     */
    ActiveMQConnectionFactory connectionFactory() {
        return new ActiveMQConnectionFactory("vm://" + serverId + "?consumerWindowSize=1024");
    }

    /**
     * Sends a text message with the Artemis core API, as a non-JMS producer (or a bridge) would: its
     * property names need not be Java identifiers ({@code outbox-id}).
     */
    void sendCore(String queue, String property, String value, String text) throws Exception {
        try (ServerLocator locator = ActiveMQClient.createServerLocator("vm://" + serverId);
                ClientSessionFactory factory = locator.createSessionFactory();
                ClientSession session = factory.createSession();
                ClientProducer producer = session.createProducer(queue)) {
            ClientMessage message = session.createMessage(Message.TEXT_TYPE, true);
            message.setRoutingType(RoutingType.ANYCAST);
            message.putStringProperty(property, value);
            message.getBodyBuffer().writeNullableSimpleString(SimpleString.of(text));
            producer.send(message);
        }
    }

    @Override
    public void close() throws Exception {
        server.stop();
    }
}
