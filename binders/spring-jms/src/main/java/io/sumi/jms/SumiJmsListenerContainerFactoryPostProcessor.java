package io.sumi.jms;

import io.sumi.consumer.binder.ListenerPauser;
import java.lang.reflect.Modifier;
import java.util.Objects;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.jspecify.annotations.Nullable;
import org.springframework.aop.framework.ProxyFactory;
import org.springframework.aop.support.NameMatchMethodPointcutAdvisor;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.jms.config.JmsListenerContainerFactory;
import org.springframework.jms.listener.AbstractMessageListenerContainer;

/**
 * Puts {@link SumiJmsMessageListener} in front of the listener of every container that the
 * {@link JmsListenerContainerFactory} beans of the context create (Spring Boot's
 * {@code jmsListenerContainerFactory} and the application's own). Spring JMS has no container
 * customizer hook that runs after the endpoint installs its listener, so each factory bean is
 * proxied (a class-based proxy: it keeps its type, {@code DefaultJmsListenerContainerFactory}
 * injection points still match; a final factory class gets an interface-based proxy) and the
 * container it returns from {@code createListenerContainer} gets Sumi's listener. Containers created without a factory: call
 * {@link SumiJmsMessageListener#wrap} yourself.
 */
public final class SumiJmsListenerContainerFactoryPostProcessor implements BeanPostProcessor {

    private final Supplier<SumiJmsSettings> settings;
    private final Supplier<@Nullable ListenerPauser<AbstractMessageListenerContainer>> budgetStopper;

    /**
     * @param settings the wrapper's settings (looked up when a container is created)
     * @param budgetStopper the stopper for spent budgets, or a supplier of {@code null} for none
     */
    public SumiJmsListenerContainerFactoryPostProcessor(
            Supplier<SumiJmsSettings> settings,
            Supplier<@Nullable ListenerPauser<AbstractMessageListenerContainer>> budgetStopper) {
        this.settings = Objects.requireNonNull(settings, "settings");
        this.budgetStopper = Objects.requireNonNull(budgetStopper, "budgetStopper");
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (!(bean instanceof JmsListenerContainerFactory<?>) || bean instanceof SumiWrapped) {
            return bean;
        }
        ProxyFactory proxy = new ProxyFactory(bean);
        // A final factory class cannot be subclassed: it gets an interface-based proxy, which the
        // @JmsListener registrar (it looks factories up by name as JmsListenerContainerFactory) takes.
        proxy.setProxyTargetClass(!Modifier.isFinal(bean.getClass().getModifiers()));
        proxy.addInterface(SumiWrapped.class);
        MethodInterceptor wrapContainer = invocation -> {
            Object container = invocation.proceed();
            if (container instanceof AbstractMessageListenerContainer listenerContainer) {
                SumiJmsMessageListener.wrap(listenerContainer, settings.get(), budgetStopper.get());
            }
            return container;
        };
        NameMatchMethodPointcutAdvisor advisor = new NameMatchMethodPointcutAdvisor(wrapContainer);
        advisor.setMappedName("createListenerContainer");
        proxy.addAdvisor(advisor);
        return proxy.getProxy(bean.getClass().getClassLoader());
    }

    /** Marks a factory proxied by Sumi, so it is never proxied twice. */
    public interface SumiWrapped {}
}
