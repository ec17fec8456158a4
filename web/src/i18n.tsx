// English and Simplified Chinese, in one small dictionary. The language defaults to
// the browser's, can be switched anywhere, and is remembered in localStorage.

import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react'

const en = {
  'app.name': 'Weft',
  'nav.newChat': 'New chat',
  'nav.sessions': 'Sessions',
  'nav.settings': 'Settings',
  'nav.recent': 'Recent',
  'nav.menu': 'Menu',
  'nav.signOut': 'Sign out',
  'nav.language': 'Language',
  'nav.skip': 'Skip to content',
  'login.title': 'Sign in to Weft',
  'login.username': 'Username',
  'login.password': 'Password',
  'login.submit': 'Sign in',
  'login.busy': 'Signing in…',
  'login.failed': 'Wrong username or password.',
  'chat.placeholder': 'Message Weft…  (Enter to send, Shift+Enter for a new line)',
  'chat.send': 'Send',
  'chat.queue': 'Queue',
  'chat.interrupt': 'Send now',
  'chat.interruptHint': 'Stop the current reply and send this message now',
  'chat.stop': 'Stop',
  'chat.stopping': 'Stopping…',
  'chat.model': 'Model',
  'chat.mode': 'Mode',
  'chat.empty': 'Start a conversation.',
  'chat.emptyHint': 'Replies stream live and survive a page reload.',
  'chat.loadEarlier': 'Load earlier messages',
  'chat.loading': 'Loading…',
  'chat.queued': 'Queued — waits for the current reply',
  'chat.sending': 'Sending…',
  'chat.thinking': 'Thinking',
  'chat.thinkingLive': 'Thinking…',
  'chat.words': '{n} words',
  'chat.waiting': 'Waiting for the model…',
  'chat.reconnecting': 'Reconnecting…',
  'chat.retrying': 'Step {step} is being retried (attempt {attempt}): {reason}',
  'chat.attempt': 'Attempt {n}',
  'chat.cancelled': 'Stopped',
  'chat.cancelledBy': 'Stopped by {by}',
  'chat.error': 'Error',
  'chat.notFound': 'This conversation does not exist or was deleted.',
  'chat.ttft': 'first token {ms}',
  'chat.tokens': '{input} in · {output} out',
  'chat.cached': '{n} cached',
  'chat.reasoning': '{n} reasoning',
  'chat.duration': 'total {ms}',
  'chat.copy': 'Copy',
  'chat.copied': 'Copied',
  'chat.untitled': 'Untitled conversation',
  'tool.running': 'running',
  'tool.ok': 'done',
  'tool.failed': 'failed',
  'tool.awaiting': 'needs approval',
  'tool.args': 'Arguments',
  'tool.output': 'Output',
  'tool.approve': 'Approve',
  'tool.deny': 'Deny',
  'tool.always': 'Always allow',
  'tool.approved': 'approved',
  'tool.approvedBy': 'approved by {by}',
  'tool.denied': 'denied',
  'tool.deniedBy': 'denied by {by}',
  'tool.expired': 'expired',
  'tool.resuming': 'resuming…',
  'tool.expiresAt': 'Expires at {time} (in {left}); unanswered, it counts as denied.',
  'tool.expiredAt': 'Expired at {time}; it counts as denied.',
  'sessions.title': 'Sessions',
  'sessions.search': 'Search titles…',
  'sessions.none': 'No conversations yet.',
  'sessions.noMatch': 'Nothing matches “{q}”.',
  'sessions.rename': 'Rename',
  'sessions.delete': 'Delete',
  'sessions.save': 'Save',
  'sessions.cancel': 'Cancel',
  'sessions.confirmDelete': 'Delete “{title}”? This cannot be undone.',
  'sessions.more': 'Load more',
  'sessions.active': 'replying',
  'sessions.updated': 'Updated {when}',
  'settings.title': 'Settings',
  'settings.general': 'General',
  'settings.account': 'Signed in as {name} ({role})',
  'settings.tokens': 'API tokens',
  'settings.tokensHint': 'Tokens let the weft CLI and scripts act as you. A new token is shown once.',
  'settings.tokenName': 'Token name',
  'settings.create': 'Create',
  'settings.newToken': 'Copy this token now — it will not be shown again:',
  'settings.revoke': 'Revoke',
  'settings.confirmRevoke': 'Revoke token “{name}”?',
  'settings.noTokens': 'No tokens.',
  'settings.created': 'Created',
  'settings.lastUsed': 'Last used',
  'settings.never': 'never',
  'settings.users': 'Users',
  'settings.username': 'Username',
  'settings.password': 'Password',
  'settings.role': 'Role',
  'settings.addUser': 'Add user',
  'settings.resetPassword': 'Set password',
  'settings.newPassword': 'New password for {name}',
  'settings.confirmDeleteUser': 'Delete user “{name}” and their conversations?',
  'settings.models': 'Models',
  'settings.provider': 'Provider',
  'settings.default': 'default',
  'settings.modes': 'Modes',
  'settings.limits': 'Limits',
  'settings.limitsHint': 'Read-only; set in the server configuration ([limits]).',
  'settings.saved': 'Saved.',
  'settings.passwordTitle': 'Password',
  'settings.passwordHint': 'At least 8 characters. Changing it signs out your other sign-ins; this one and your API tokens keep working.',
  'settings.currentPassword': 'Current password',
  'settings.newPasswordLabel': 'New password',
  'settings.confirmPassword': 'Repeat the new password',
  'settings.changePassword': 'Change password',
  'settings.changingPassword': 'Changing…',
  'settings.passwordTooShort': 'The new password must be at least {n} characters.',
  'settings.passwordTooLong': 'The new password can be at most {n} characters.',
  'settings.passwordMismatch': 'The two new passwords do not match.',
  'settings.passwordChanged': 'Password changed. Your other sign-ins were signed out.',
  'settings.retryIn': 'try again in {n} s',
  'settings.signIns': 'Where you’re signed in',
  'settings.signInsHint': 'Browsers and clients signed in with your password. Revoking one signs it out; revoking this browser’s signs you out here.',
  'settings.kind': 'Kind',
  'settings.kindLogin': 'Sign-in',
  'settings.kindBootstrap': 'Admin token (WEFT_ADMIN_TOKEN)',
  'settings.kindApi': 'API token',
  'settings.expires': 'Expires',
  'settings.thisBrowser': 'this browser',
  'settings.confirmRevokeSignIn': 'Sign out the sign-in from {when}?',
  'settings.confirmRevokeCurrent': 'This is the sign-in you are using now: revoking it signs you out. Continue?',
  'settings.noSignIns': 'No sign-ins.',
  'mcp.title': 'MCP servers',
  'mcp.hint': 'Read-only; configured with [[mcp_servers]] in the server configuration. Each worker reports what it sees every few seconds; workers silent for a minute are left out.',
  'mcp.none': 'No MCP servers are configured.',
  'mcp.server': 'Server',
  'mcp.state': 'State',
  'mcp.transport': 'Transport',
  'mcp.policy': 'Policy',
  'mcp.tools': 'Tools',
  'mcp.toolCount': '{n} tools',
  'mcp.toolCountOne': '1 tool',
  'mcp.lastError': 'Last error',
  'mcp.since': 'since {when}',
  'mcp.noReport': 'no report',
  'mcp.notConfigured': 'not configured here',
  'mcp.notConfiguredHint': 'A worker runs this server, but the gateway’s configuration does not name it.',
  'mcp.workers': 'Reported by: {workers}',
  'mcp.noWorkers': 'No worker has reported in the last minute.',
  'mcp.refresh': 'Refresh',
  'mcp.state.starting': 'starting',
  'mcp.state.ready': 'ready',
  'mcp.state.error': 'error',
  'mcp.state.stopped': 'stopped',
  'mcp.policy.auto': 'runs freely',
  'mcp.policy.confirm': 'asks first',
  'mcp.policy.deny': 'denied',
  'limits.body_bytes': 'Request body',
  'limits.message_chars': 'Message length (characters)',
  'limits.attachments_bytes': 'Attachments',
  'limits.active_runs_per_user': 'Active replies per user',
  'limits.runs_per_minute_per_user': 'Replies per minute per user',
  'limits.off': 'off',
  'common.error': 'Something went wrong: {message}',
  'common.close': 'Close',
  'common.delete': 'Delete',
  'common.admin': 'admin',
  'common.user': 'user',
}

export type MessageKey = keyof typeof en

const zh: Record<MessageKey, string> = {
  'app.name': 'Weft',
  'nav.newChat': '新对话',
  'nav.sessions': '会话',
  'nav.settings': '设置',
  'nav.recent': '最近',
  'nav.menu': '菜单',
  'nav.signOut': '退出登录',
  'nav.language': '语言',
  'nav.skip': '跳到正文',
  'login.title': '登录 Weft',
  'login.username': '用户名',
  'login.password': '密码',
  'login.submit': '登录',
  'login.busy': '正在登录…',
  'login.failed': '用户名或密码错误。',
  'chat.placeholder': '给 Weft 发消息…（Enter 发送，Shift+Enter 换行）',
  'chat.send': '发送',
  'chat.queue': '排队',
  'chat.interrupt': '立即发送',
  'chat.interruptHint': '停止当前回复并立即发送这条消息',
  'chat.stop': '停止',
  'chat.stopping': '正在停止…',
  'chat.model': '模型',
  'chat.mode': '模式',
  'chat.empty': '开始一段对话。',
  'chat.emptyHint': '回复实时流式显示，刷新页面也不会丢失。',
  'chat.loadEarlier': '加载更早的消息',
  'chat.loading': '加载中…',
  'chat.queued': '排队中 — 等待当前回复结束',
  'chat.sending': '发送中…',
  'chat.thinking': '思考过程',
  'chat.thinkingLive': '思考中…',
  'chat.words': '{n} 个词',
  'chat.waiting': '等待模型响应…',
  'chat.reconnecting': '正在重新连接…',
  'chat.retrying': '第 {step} 步正在重试（第 {attempt} 次）：{reason}',
  'chat.attempt': '第 {n} 次尝试',
  'chat.cancelled': '已停止',
  'chat.cancelledBy': '已被 {by} 停止',
  'chat.error': '出错了',
  'chat.notFound': '该对话不存在或已被删除。',
  'chat.ttft': '首字 {ms}',
  'chat.tokens': '输入 {input} · 输出 {output}',
  'chat.cached': '缓存 {n}',
  'chat.reasoning': '推理 {n}',
  'chat.duration': '总耗时 {ms}',
  'chat.copy': '复制',
  'chat.copied': '已复制',
  'chat.untitled': '未命名对话',
  'tool.running': '运行中',
  'tool.ok': '完成',
  'tool.failed': '失败',
  'tool.awaiting': '等待批准',
  'tool.args': '参数',
  'tool.output': '输出',
  'tool.approve': '批准',
  'tool.deny': '拒绝',
  'tool.always': '始终允许',
  'tool.approved': '已批准',
  'tool.approvedBy': '已由 {by} 批准',
  'tool.denied': '已拒绝',
  'tool.deniedBy': '已由 {by} 拒绝',
  'tool.expired': '已过期',
  'tool.resuming': '正在继续…',
  'tool.expiresAt': '{time} 过期（还剩 {left}）；届时无人答复即视为拒绝。',
  'tool.expiredAt': '已于 {time} 过期，视为拒绝。',
  'sessions.title': '会话',
  'sessions.search': '搜索标题…',
  'sessions.none': '还没有对话。',
  'sessions.noMatch': '没有与“{q}”匹配的对话。',
  'sessions.rename': '重命名',
  'sessions.delete': '删除',
  'sessions.save': '保存',
  'sessions.cancel': '取消',
  'sessions.confirmDelete': '删除“{title}”？此操作无法撤销。',
  'sessions.more': '加载更多',
  'sessions.active': '回复中',
  'sessions.updated': '更新于 {when}',
  'settings.title': '设置',
  'settings.general': '通用',
  'settings.account': '当前用户：{name}（{role}）',
  'settings.tokens': 'API 令牌',
  'settings.tokensHint': '令牌可让 weft 命令行和脚本以你的身份操作。新令牌只显示一次。',
  'settings.tokenName': '令牌名称',
  'settings.create': '创建',
  'settings.newToken': '请立即复制该令牌 — 之后不会再显示：',
  'settings.revoke': '吊销',
  'settings.confirmRevoke': '吊销令牌“{name}”？',
  'settings.noTokens': '没有令牌。',
  'settings.created': '创建时间',
  'settings.lastUsed': '最近使用',
  'settings.never': '从未',
  'settings.users': '用户',
  'settings.username': '用户名',
  'settings.password': '密码',
  'settings.role': '角色',
  'settings.addUser': '添加用户',
  'settings.resetPassword': '设置密码',
  'settings.newPassword': '{name} 的新密码',
  'settings.confirmDeleteUser': '删除用户“{name}”及其所有对话？',
  'settings.models': '模型',
  'settings.provider': '提供方',
  'settings.default': '默认',
  'settings.modes': '模式',
  'settings.limits': '限制',
  'settings.limitsHint': '只读；在服务器配置（[limits]）中设置。',
  'settings.saved': '已保存。',
  'settings.passwordTitle': '密码',
  'settings.passwordHint': '至少 8 个字符。修改后，你在其他地方的登录会被退出；当前登录和 API 令牌不受影响。',
  'settings.currentPassword': '当前密码',
  'settings.newPasswordLabel': '新密码',
  'settings.confirmPassword': '再次输入新密码',
  'settings.changePassword': '修改密码',
  'settings.changingPassword': '正在修改…',
  'settings.passwordTooShort': '新密码至少需要 {n} 个字符。',
  'settings.passwordTooLong': '新密码最多 {n} 个字符。',
  'settings.passwordMismatch': '两次输入的新密码不一致。',
  'settings.passwordChanged': '密码已修改。你在其他地方的登录已被退出。',
  'settings.retryIn': '请 {n} 秒后再试',
  'settings.signIns': '登录位置',
  'settings.signInsHint': '用你的密码登录的浏览器和客户端。吊销某一项即让它退出登录；吊销当前浏览器的登录会让你在这里退出。',
  'settings.kind': '类型',
  'settings.kindLogin': '登录会话',
  'settings.kindBootstrap': '管理员令牌（WEFT_ADMIN_TOKEN）',
  'settings.kindApi': 'API 令牌',
  'settings.expires': '过期时间',
  'settings.thisBrowser': '当前浏览器',
  'settings.confirmRevokeSignIn': '让 {when} 的这次登录退出？',
  'settings.confirmRevokeCurrent': '这是你当前正在使用的登录：吊销后你将退出登录。继续吗？',
  'settings.noSignIns': '没有登录。',
  'mcp.title': 'MCP 服务器',
  'mcp.hint': '只读；在服务器配置的 [[mcp_servers]] 中设置。每个 worker 每隔几秒上报它看到的状态；一分钟内没有上报的 worker 不再列出。',
  'mcp.none': '未配置任何 MCP 服务器。',
  'mcp.server': '服务器',
  'mcp.state': '状态',
  'mcp.transport': '传输方式',
  'mcp.policy': '策略',
  'mcp.tools': '工具',
  'mcp.toolCount': '{n} 个工具',
  'mcp.toolCountOne': '1 个工具',
  'mcp.lastError': '最近错误',
  'mcp.since': '自 {when}',
  'mcp.noReport': '未上报',
  'mcp.notConfigured': '本处未配置',
  'mcp.notConfiguredHint': '有 worker 在运行该服务器，但网关的配置中没有它。',
  'mcp.workers': '上报的 worker：{workers}',
  'mcp.noWorkers': '最近一分钟内没有 worker 上报。',
  'mcp.refresh': '刷新',
  'mcp.state.starting': '启动中',
  'mcp.state.ready': '就绪',
  'mcp.state.error': '出错',
  'mcp.state.stopped': '已停止',
  'mcp.policy.auto': '直接运行',
  'mcp.policy.confirm': '需先批准',
  'mcp.policy.deny': '禁止',
  'limits.body_bytes': '请求体大小',
  'limits.message_chars': '消息长度（字符）',
  'limits.attachments_bytes': '附件大小',
  'limits.active_runs_per_user': '每用户同时进行的回复',
  'limits.runs_per_minute_per_user': '每用户每分钟回复数',
  'limits.off': '不限',
  'common.error': '出错了：{message}',
  'common.close': '关闭',
  'common.delete': '删除',
  'common.admin': '管理员',
  'common.user': '普通用户',
}

export type Lang = 'en' | 'zh'
export const LANGS: { id: Lang; label: string }[] = [
  { id: 'en', label: 'English' },
  { id: 'zh', label: '简体中文' },
]
const DICTS: Record<Lang, Record<MessageKey, string>> = { en, zh }
const STORAGE_KEY = 'weft.lang'

export function detectLang(stored: string | null, browser: readonly string[]): Lang {
  if (stored === 'en' || stored === 'zh') return stored
  for (const l of browser) {
    const low = l.toLowerCase()
    if (low.startsWith('zh')) return 'zh'
    if (low.startsWith('en')) return 'en'
  }
  return 'en'
}

export type Translate = (key: MessageKey, vars?: Record<string, string | number>) => string

export function translator(lang: Lang): Translate {
  const dict = DICTS[lang]
  return (key, vars) => {
    let s = dict[key] ?? en[key] ?? key
    if (vars) for (const [k, v] of Object.entries(vars)) s = s.split(`{${k}}`).join(String(v))
    return s
  }
}

interface I18n {
  lang: Lang
  setLang: (l: Lang) => void
  t: Translate
}

const Ctx = createContext<I18n | null>(null)

function readStored(): string | null {
  try {
    return localStorage.getItem(STORAGE_KEY)
  } catch {
    return null
  }
}

export function I18nProvider({ children }: { children: ReactNode }) {
  const [lang, setLangState] = useState<Lang>(() =>
    detectLang(readStored(), navigator.languages?.length ? navigator.languages : [navigator.language]),
  )
  const setLang = useCallback((l: Lang) => {
    setLangState(l)
    try {
      localStorage.setItem(STORAGE_KEY, l)
    } catch {
      // private mode: the choice lasts for this page only
    }
  }, [])
  useEffect(() => {
    document.documentElement.lang = lang === 'zh' ? 'zh-CN' : 'en'
  }, [lang])
  const value = useMemo(() => ({ lang, setLang, t: translator(lang) }), [lang, setLang])
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>
}

export function useI18n(): I18n {
  const v = useContext(Ctx)
  if (!v) throw new Error('useI18n outside I18nProvider')
  return v
}

export function useT(): Translate {
  return useI18n().t
}
