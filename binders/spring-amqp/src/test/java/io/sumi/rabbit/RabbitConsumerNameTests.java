package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.annotation.RabbitHandler;
import org.springframework.amqp.rabbit.annotation.RabbitListener;

/** The consumer name (ledger namespace) Sumi gives a Rabbit listener method. */
class RabbitConsumerNameTests {

    private final IdempotentRabbitHandlerInterceptor interceptor = new IdempotentRabbitHandlerInterceptor(
            () -> IdempotentExecutor.builder(JdbcProcessedMessageStore.builder(TestDatabase.POSTGRESQL.dataSource())
                            .build())
                    .build(),
            HandlerDefaults::standard);

    @RabbitListener(id = "orders-listener", queues = "orders")
    static class ClassLevelListener {

        @RabbitHandler
        @IdempotentHandler
        public void onText(String payload) {}
    }

    static class MethodLevelListener {

        @RabbitListener(id = "mails", queues = "mails")
        @IdempotentHandler
        public void onMail(String payload) {}
    }

    @RabbitListener(queues = "no-id")
    static class ClassLevelListenerWithoutId {

        @RabbitHandler
        @IdempotentHandler
        public void onText(String payload) {}
    }

    @Test
    void aClassLevelRabbitListenerIdNamesTheConsumerOfItsRabbitHandlerMethods() throws Exception {
        assertThat(interceptor
                        .definition(
                                ClassLevelListener.class.getMethod("onText", String.class), ClassLevelListener.class)
                        .consumer())
                .isEqualTo("orders-listener");
    }

    @Test
    void aMethodLevelRabbitListenerIdNamesTheConsumer() throws Exception {
        assertThat(interceptor
                        .definition(
                                MethodLevelListener.class.getMethod("onMail", String.class), MethodLevelListener.class)
                        .consumer())
                .isEqualTo("mails");
    }

    @Test
    void withoutAnIdTheConsumerIsClassDotMethod() throws Exception {
        assertThat(interceptor
                        .definition(
                                ClassLevelListenerWithoutId.class.getMethod("onText", String.class),
                                ClassLevelListenerWithoutId.class)
                        .consumer())
                .isEqualTo("ClassLevelListenerWithoutId.onText");
    }
}
