// Signing in, registering and resetting a password.

import { confirmReset, register as registerUser, requestReset, signIn as signInUser } from '../api.js';
import { act, field, h, toast } from '../dom.js';

function authCard(title, form, links) {
  return h('div', { class: 'auth' },
    h('section', { class: 'card auth-card' }, h('h1', {}, title), form, h('p', { class: 'links' }, links)));
}

function input(name, type, attrs = {}) {
  return h('input', { name, type, required: true, autocomplete: attrs.autocomplete, ...attrs });
}

export function signIn(page, ctx) {
  const email = input('email', 'email', { autocomplete: 'username' });
  const password = input('password', 'password', { autocomplete: 'current-password' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const form = h('form', { id: 'signin-form' },
    field('E-mail', email), field('Password', password), submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const user = await act(submit, () => signInUser(email.value.trim(), password.value));
    if (user) ctx.signedIn();
  });
  page.append(authCard('Sign in to tradehost', form, [
    h('a', { href: '#/register' }, 'Create an account'), ' · ',
    h('a', { href: '#/reset' }, 'Forgot your password?'),
  ]));
  email.focus();
}

export function register(page, ctx) {
  const name = input('full_name', 'text', { autocomplete: 'name' });
  const email = input('email', 'email', { autocomplete: 'username' });
  const password = input('password', 'password', { autocomplete: 'new-password', minlength: 8, maxlength: 128 });
  const terms = h('input', { type: 'checkbox', name: 'accept_terms', required: true, id: 'accept-terms' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create account');
  const form = h('form', { id: 'register-form' },
    field('Full name', name),
    field('E-mail', email),
    field('Password', password, 'At least 8 characters; common passwords are refused.'),
    h('div', { class: 'check' }, terms, h('label', { for: 'accept-terms' }, 'I accept the terms of service')),
    submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const user = await act(submit, () => registerUser(name.value.trim(), email.value.trim(), password.value),
      'Welcome! Your 14-day trial has started.');
    if (user) ctx.signedIn();
  });
  page.append(authCard('Create your account', form, [
    'Already registered? ', h('a', { href: '#/signin' }, 'Sign in'),
  ]));
  name.focus();
}

export function reset(page) {
  const token = new URLSearchParams(location.search).get('token');
  if (token) {
    const password = input('new_password', 'password', { autocomplete: 'new-password', minlength: 8 });
    const submit = h('button', { type: 'submit', class: 'primary' }, 'Set new password');
    const form = h('form', { id: 'reset-confirm-form' },
      field('New password', password, 'At least 8 characters.'), submit);
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const done = await act(submit, () => confirmReset(token, password.value));
      if (done) {
        toast('Password changed; sign in with the new one.', 'success');
        window.history.replaceState(null, '', '/#/signin');
        window.dispatchEvent(new HashChangeEvent('hashchange'));
      }
    });
    page.append(authCard('Choose a new password', form, [h('a', { href: '/#/signin' }, 'Back to sign in')]));
    password.focus();
    return;
  }
  const email = input('email', 'email', { autocomplete: 'username' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Send reset link');
  const form = h('form', { id: 'reset-form' }, field('E-mail', email), submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const answer = await act(submit, () => requestReset(email.value.trim()));
    if (answer) toast(answer.message || 'If the address is registered, a reset link is on its way.', 'success');
  });
  page.append(authCard('Reset your password', form, [h('a', { href: '#/signin' }, 'Back to sign in')]));
  email.focus();
}
