package io.sumi.consumer.binder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

import io.sumi.consumer.HandlerDefaults;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.messaging.SpringMessageInboundMessage;
import io.sumi.store.ClaimRequest;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;

/**
 * The skeleton every binder's interceptor runs on: the order in which it calls a binder's
 * {@link IdempotentHandlerInterceptorSupport.Settlement}, the refusal mapping (whether the listener
 * ran), which calls are the container's own, and the return-type rule at definition time. Runs on
 * the real JDBC ledger in H2.
 */
class IdempotentHandlerInterceptorSupportTests {

    private static final Duration LEASE = Duration.ofMinutes(5);

    private final List<String> events = new ArrayList<>();
    private final List<Boolean> listenerInvocations = new ArrayList<>();
    private JdbcProcessedMessageStore store;
    private String consumer;
    private Listener listener;

    @BeforeEach
    void setUp() {
        store = JdbcProcessedMessageStore.builder(TestDatabase.H2.dataSource()).build();
        consumer = "skeleton-" + UUID.randomUUID();
        IdempotentExecutor executor = IdempotentExecutor.builder(store).build();
        ProxyFactory factory = new ProxyFactory(new Listener(events));
        factory.setProxyTargetClass(true);
        factory.addAdvice(new RecordingInterceptor(executor, false));
        listener = (Listener) factory.getProxy();
    }

    @Test
    void aProcessedMessageIsCheckedAfterTheListenerReturnedThenSettled() {
        assertThat(listener.handle(message("k1"))).isEqualTo("ran k1");

        assertThat(events).containsExactly("listener k1", "returned ran k1", "settled PROCESSED");
    }

    @Test
    void aDuplicateIsSettledWithoutRunningTheListener() {
        listener.handle(message("k2"));
        events.clear();

        listener.handle(message("k2"));

        assertThat(events).containsExactly("settled DUPLICATE");
    }

    @Test
    void aRefusalBeforeTheListenerRanIsReportedAsNotRun() {
        store.claim(consumer, new ClaimRequest("k3", null), LEASE);

        assertThatExceptionOfType(MessageBusyException.class).isThrownBy(() -> listener.handle(message("k3")));

        assertThat(events).containsExactly("failed MessageBusyException ran=false");
    }

    @Test
    void aFailureOfTheListenerIsReportedAsRun() {
        assertThatIllegalStateException().isThrownBy(() -> listener.handle(message("fail")));

        assertThat(events).containsExactly("listener fail", "failed IllegalStateException ran=true");
    }

    @Test
    void aGuardedCallInsideAnotherIsNotTheContainersOwnInvocation() {
        listener.outer(message("outer"), listener);

        assertThat(listenerInvocations).containsExactly(true, false);
    }

    @Test
    void anAsynchronousMethodIsRefusedWhereTheContainerDoesNotWaitForIt() throws Exception {
        IdempotentExecutor executor = IdempotentExecutor.builder(store).build();
        Method async = Listener.class.getMethod("handleAsync", Message.class);

        assertThat(new RecordingInterceptor(executor, true).definition(async, Listener.class))
                .isNotNull();
        assertThatIllegalStateException()
                .isThrownBy(() -> new RecordingInterceptor(executor, false).definition(async, Listener.class))
                .withMessageContaining("test container acknowledges the message when the method returns");
    }

    private static Message<String> message(String key) {
        return MessageBuilder.withPayload("payload " + key)
                .setHeader("idempotency-key", key)
                .build();
    }

    /** A binder whose native message is a messaging {@code Message} and whose listener methods are all the container's. */
    private final class RecordingInterceptor extends IdempotentHandlerInterceptorSupport {

        RecordingInterceptor(IdempotentExecutor executor, boolean containerWaits) {
            super(() -> executor, HandlerDefaults::standard, "the test container", containerWaits);
        }

        @Override
        protected @Nullable Object guard(
                MethodInvocation invocation, HandlerDefinition definition, boolean listenerInvocation)
                throws Exception {
            listenerInvocations.add(listenerInvocation);
            InboundMessage message = messageArgument(invocation.getArguments());
            if (message == null) {
                throw calledWithoutMessage(invocation.getMethod(), listenerInvocation, "listener", "service");
            }
            return execute(invocation, definition, message, new Settlement() {
                @Override
                public @Nullable Object returned(@Nullable Object value) {
                    events.add("returned " + value);
                    return value;
                }

                @Override
                public void settled(HandlerResult<?> result) {
                    events.add("settled " + result.outcome());
                }

                @Override
                public void failed(Throwable failure, boolean ran) {
                    events.add("failed " + failure.getClass().getSimpleName() + " ran=" + ran);
                }
            });
        }

        @Override
        protected boolean invokedByContainer(Method method, Class<?> targetClass) {
            return true;
        }

        @Override
        protected @Nullable String listenerId(Method method, Class<?> targetClass) {
            return consumer;
        }

        @Override
        protected @Nullable InboundMessage nativeMessage(Object arg) {
            return arg instanceof Message<?> message ? new SpringMessageInboundMessage(message) : null;
        }
    }

    /** The guarded methods. */
    public static class Listener {

        private final List<String> events;

        Listener(List<String> events) {
            this.events = events;
        }

        @IdempotentHandler
        public String handle(Message<String> message) {
            String key = (String) message.getHeaders().get("idempotency-key");
            events.add("listener " + key);
            if ("fail".equals(key)) {
                throw new IllegalStateException("the listener failed");
            }
            return "ran " + key;
        }

        @IdempotentHandler
        public void outer(Message<String> message, Listener self) {
            self.handle(message("inner"));
        }

        @IdempotentHandler
        public CompletableFuture<String> handleAsync(Message<String> message) {
            return CompletableFuture.completedFuture("async");
        }
    }
}
