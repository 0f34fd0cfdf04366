package io.sumi.rabbit;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.AmqpException;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.config.ContainerCustomizer;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.amqp.rabbit.listener.adapter.MessagingMessageListenerAdapter;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The one place where the binder meets the types that Spring AMQP 4.1 (Spring Boot 4.1) moved out
 * of {@code spring-rabbit} into {@code spring-amqp}, so that one jar of this binder links and runs
 * on Spring AMQP 4.0 and 4.1 alike (docs/compatibility.md):
 *
 * <ul>
 *   <li>{@code ContainerCustomizer<C extends MessageListenerContainer>}: the bound moved from
 *       {@code o.s.amqp.rabbit.listener} to {@code o.s.amqp.core}, so the erasure of
 *       {@code configure(C)} differs between the lines, and a class that implements or calls it
 *       compiles to one line's method only. Sumi's customizer is a {@link Proxy} of the interface
 *       as it is at run time, and it calls the application's customizer through the
 *       {@link Method} it was called with.
 *   <li>{@code ListenerExecutionFailedException}: 4.1's containers check
 *       {@code o.s.amqp.listener.ListenerExecutionFailedException} (the {@code rabbit.support} one
 *       is a deprecated subclass there); created reflectively, whichever the line has.
 *   <li>{@code HandlerAdapter}: 4.1's listener adapters hold an
 *       {@code o.s.amqp.listener.adapter.HandlerAdapter}, which is not the deprecated
 *       {@code rabbit.listener.adapter} one; read by reflection on the object's own class.
 * </ul>
 *
 * <p>Nothing else in the binder names these types.
 */
final class SpringAmqpLines {

    /** Spring AMQP 4.1's exception first, then 4.0's (a deprecated subclass of 4.1's on 4.1). */
    private static final Constructor<? extends AmqpException> LISTENER_EXECUTION_FAILED = findListenerExecutionFailed(
            "org.springframework.amqp.listener.ListenerExecutionFailedException",
            "org.springframework.amqp.rabbit.support.ListenerExecutionFailedException");

    /** {@code MessagingMessageListenerAdapter.handlerAdapter}: its getter is protected. */
    private static final @Nullable Field HANDLER_ADAPTER =
            ReflectionUtils.findField(MessagingMessageListenerAdapter.class, "handlerAdapter");

    private SpringAmqpLines() {}

    /**
     * A {@code ListenerExecutionFailedException} of the Spring AMQP line on the class path: the
     * type the container treats as a listener's failure (it keeps its consumer).
     */
    static AmqpException listenerExecutionFailed(String message, Throwable cause, Message... failed) {
        try {
            return LISTENER_EXECUTION_FAILED.newInstance(message, cause, failed);
        } catch (InvocationTargetException e) {
            throw new IllegalStateException("Spring AMQP's ListenerExecutionFailedException failed", e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Spring AMQP's ListenerExecutionFailedException cannot be created", e);
        }
    }

    private static Constructor<? extends AmqpException> findListenerExecutionFailed(String... names) {
        ClassLoader loader = SpringAmqpLines.class.getClassLoader();
        for (String name : names) {
            if (ClassUtils.isPresent(name, loader)) {
                try {
                    return ClassUtils.forName(name, loader)
                            .asSubclass(AmqpException.class)
                            .getConstructor(String.class, Throwable.class, Message[].class);
                } catch (ClassNotFoundException | NoSuchMethodException e) {
                    throw new IllegalStateException("Sumi does not know this Spring AMQP: " + name, e);
                }
            }
        }
        throw new IllegalStateException("Sumi does not know this Spring AMQP: no ListenerExecutionFailedException");
    }

    /**
     * A container customizer (the interface as the line on the class path declares it) that runs
     * {@code delegate}, the application's customizer or {@code null}, then {@code configure}.
     */
    static ContainerCustomizer<?> customizer(
            @Nullable ContainerCustomizer<?> delegate, Consumer<AbstractMessageListenerContainer> configure) {
        return (ContainerCustomizer<?>) Proxy.newProxyInstance(
                SpringAmqpLines.class.getClassLoader(),
                new Class<?>[] {ContainerCustomizer.class},
                new SumiCustomizer(delegate, configure));
    }

    /** Whether {@code customizer} is one of {@link #customizer}'s. */
    static boolean isSumiCustomizer(@Nullable ContainerCustomizer<?> customizer) {
        return customizer != null
                && Proxy.isProxyClass(customizer.getClass())
                && Proxy.getInvocationHandler(customizer) instanceof SumiCustomizer;
    }

    private static final class SumiCustomizer implements InvocationHandler {

        private final @Nullable ContainerCustomizer<?> delegate;
        private final Consumer<AbstractMessageListenerContainer> configure;

        SumiCustomizer(
                @Nullable ContainerCustomizer<?> delegate, Consumer<AbstractMessageListenerContainer> configure) {
            this.delegate = delegate;
            this.configure = configure;
        }

        @Override
        public @Nullable Object invoke(Object proxy, Method method, @Nullable Object @Nullable [] args)
                throws Throwable {
            if (method.getDeclaringClass() == Object.class) {
                return switch (method.getName()) {
                    case "equals" -> args != null && proxy == args[0];
                    case "hashCode" -> System.identityHashCode(proxy);
                    default -> "Sumi's container customizer" + (delegate == null ? "" : " after " + delegate);
                };
            }
            if (!"configure".equals(method.getName()) || args == null || args.length != 1) {
                throw new UnsupportedOperationException("Sumi's container customizer has no method " + method);
            }
            if (delegate != null) {
                try {
                    method.invoke(delegate, args);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            }
            if (args[0] instanceof AbstractMessageListenerContainer container) {
                configure.accept(container);
            }
            return null;
        }
    }

    /** The adapter's handler adapter (4.0's {@code rabbit.listener.adapter} or 4.1's own type), or {@code null}. */
    static @Nullable Object handlerAdapter(MessagingMessageListenerAdapter adapter) {
        if (HANDLER_ADAPTER == null) {
            return null;
        }
        ReflectionUtils.makeAccessible(HANDLER_ADAPTER);
        return ReflectionUtils.getField(HANDLER_ADAPTER, adapter);
    }

    /** The value of the handler adapter's field {@code name}, or {@code null} if it has none. */
    static @Nullable Object field(Object handlerAdapter, String name) {
        Field field = ReflectionUtils.findField(handlerAdapter.getClass(), name);
        if (field == null) {
            return null;
        }
        ReflectionUtils.makeAccessible(field);
        return ReflectionUtils.getField(field, handlerAdapter);
    }

    /** The handler adapter's {@code getBean()}, or {@code null} if it has none. */
    static @Nullable Object bean(Object handlerAdapter) {
        Method getBean = ReflectionUtils.findMethod(handlerAdapter.getClass(), "getBean");
        return getBean == null ? null : ReflectionUtils.invokeMethod(getBean, handlerAdapter);
    }
}
