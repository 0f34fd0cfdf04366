package io.sumi.jms;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import jakarta.jms.MessageListener;
import jakarta.jms.Session;
import org.apache.activemq.artemis.jms.client.ActiveMQConnectionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.jms.connection.JmsTransactionManager;
import org.springframework.jms.listener.DefaultMessageListenerContainer;

/** Wrapping a container: once, and with a warning when its acknowledge mode loses failed messages. */
class SumiJmsMessageListenerTests {

    private final ListAppender<ILoggingEvent> logs = new ListAppender<>();
    private final Logger logger = (Logger) LoggerFactory.getLogger(SumiJmsMessageListener.class);

    @BeforeEach
    void capture() {
        logs.start();
        logger.addAppender(logs);
    }

    @AfterEach
    void release() {
        logger.detachAppender(logs);
    }

    private static DefaultMessageListenerContainer container(boolean transacted, int acknowledgeMode) {
        DefaultMessageListenerContainer container = new DefaultMessageListenerContainer();
        container.setDestinationName("orders");
        container.setSessionTransacted(transacted);
        container.setSessionAcknowledgeMode(acknowledgeMode);
        container.setMessageListener((MessageListener) message -> {});
        return container;
    }

    private long warnings() {
        return logs.list.stream()
                .filter(event -> event.getLevel() == Level.WARN
                        && event.getFormattedMessage().contains("acknowledges each message before its listener runs"))
                .count();
    }

    @Test
    void anAutoAcknowledgeContainerIsWrappedOnceAndWarnedAbout() {
        DefaultMessageListenerContainer container = container(false, Session.AUTO_ACKNOWLEDGE);
        Object original = container.getMessageListener();

        SumiJmsMessageListener.wrap(container, SumiJmsSettings.defaults(), null);
        SumiJmsMessageListener.wrap(container, SumiJmsSettings.defaults(), null);

        assertThat(container.getMessageListener()).isInstanceOf(SumiJmsMessageListener.class);
        assertThat(((SumiJmsMessageListener) container.getMessageListener()).delegate())
                .isSameAs(original);
        assertThat(warnings()).isEqualTo(1);
        assertThat(logs.list.get(0).getFormattedMessage()).contains("queue orders");
    }

    @Test
    void aNonTransactedSessionIsWarnedAboutAlthoughTheContainerHasAJdbcTransactionManager() {
        // A DataSourceTransactionManager does not make the JMS session transacted: AUTO_ACKNOWLEDGE
        // still acknowledges before the listener runs.
        DefaultMessageListenerContainer container = container(false, Session.AUTO_ACKNOWLEDGE);
        container.setTransactionManager(new DataSourceTransactionManager(new SimpleDriverDataSource()));

        SumiJmsMessageListener.wrap(container, SumiJmsSettings.defaults(), null);

        assertThat(warnings()).isEqualTo(1);
    }

    @Test
    void aContainerWithAJmsTransactionManagerIsNotWarnedAbout() {
        DefaultMessageListenerContainer container = container(false, Session.AUTO_ACKNOWLEDGE);
        container.setTransactionManager(new JmsTransactionManager(new ActiveMQConnectionFactory("vm://0")));

        SumiJmsMessageListener.wrap(container, SumiJmsSettings.defaults(), null);

        assertThat(warnings()).isZero();
    }

    @Test
    void transactedAndClientAcknowledgeContainersAreNotWarnedAbout() {
        SumiJmsMessageListener.wrap(container(true, Session.AUTO_ACKNOWLEDGE), SumiJmsSettings.defaults(), null);
        SumiJmsMessageListener.wrap(container(false, Session.CLIENT_ACKNOWLEDGE), SumiJmsSettings.defaults(), null);

        assertThat(warnings()).isZero();
    }
}
